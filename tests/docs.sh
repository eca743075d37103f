#!/usr/bin/env bash
# The documentation says what is there: every relative link of README.md and docs/*.md reaches a
# file (and a heading, when it names one), the README stays a guide of at most 500 lines, and the
# JSON report's keys and the sweep's columns are each documented in docs/report.md (the JSON
# report is the interface scripts use: a key nobody documented is a key nobody can rely on).
# Usage: docs.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$src/tests/lib.sh"
cd "$src" || exit 1

lines="$(wc -l <README.md)"
[ "$lines" -le 500 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL readme-length: $lines lines, at most 500"; }

# GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -.
slugs() { # file: one anchor per heading outside fenced code
    awk '/^```/ { f = !f; next } !f && /^#+ / { sub(/^#+ /, ""); print }' "$1" |
        tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
for md in README.md docs/*.md; do
    dir="$(dirname "$md")"
    # the targets of [text](target) outside fenced code, but web links
    awk '/^```/ { f = !f; next } !f { s = $0
        while (match(s, /\]\([^) ]+\)/)) { print substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH) } }' "$md" |
        grep -vE '^(https?|mailto):' >"$tmp/links"
    while IFS= read -r link; do
        file="${link%%#*}"; anchor=""; [ "$file" != "$link" ] && anchor="${link#*#}"
        target="$md"; [ -n "$file" ] && target="$dir/$file"
        if [ ! -e "$target" ]; then
            fail=$((fail + 1)); echo "FAIL link: $md: ($link): no $target"; continue
        fi
        if [ -n "$anchor" ] && ! slugs "$target" | grep -qxF -- "$anchor"; then
            fail=$((fail + 1)); echo "FAIL link: $md: ($link): no heading #$anchor in $target"; continue
        fi
        pass=$((pass + 1))
    done <"$tmp/links"
done

# Every key of the JSON reports of scenarios that between them turn on every optional block
# (MoE, ZeRO++, FSDP's hybrid shard, interleaved, sequence parallelism, TP overlap, a what-if
# knob), in backquotes in docs/report.md, alone, as a part of a dotted path (`.moe_layers`,
# `sim.events`, `comm[].op`) or as the object holding one (`memory.`).
for sc in 20B_tp8 1.3B_zeropp 1.3B_hsdp 1.3B_interleaved 13B_tp8_sp 1.3B_tp_overlap mixtral_8x7b_frontier; do
    "$sim" "scenarios/$sc.yaml" --format json --set topology.node.nics.bandwidth=50GB/s
done 2>"$tmp/err" | grep -o '"[a-z_][a-z0-9_]*":' | tr -d '":' | sort -u >"$tmp/keys"
[ -s "$tmp/keys" ] || { fail=$((fail + 1)); echo "FAIL json-keys: no report"; cat "$tmp/err"; }
while IFS= read -r key; do
    if grep -qE "\`([][a-z_.]*\.)?$key(\`|\.|\[)" docs/report.md; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL json-key: '$key' is not documented in docs/report.md"; fi
done <"$tmp/keys"

# Every sweep column but the varied keys and the per-(op, dim) families (documented as patterns)
"$sim" sweep scenarios/20B_tp8.yaml --vary nodes=1,2 --timing -q 2>"$tmp/err" | head -1 | tr ',' '\n' |
    grep -vE '^nodes$|_(time|exposed|hidden)_s$|_volume_bytes$|_sizes$' >"$tmp/cols"
[ -s "$tmp/cols" ] || { fail=$((fail + 1)); echo "FAIL sweep-columns: no header"; cat "$tmp/err"; }
while IFS= read -r c; do
    if grep -qF "\`$c\`" docs/report.md; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL sweep-column: '$c' is not documented in docs/report.md"; fi
done <"$tmp/cols"
finish docs
