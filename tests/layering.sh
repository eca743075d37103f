#!/usr/bin/env bash
# layering: sim/ is in folders by layer, and a folder may only use the folders below it
# (CMakeLists.txt's SIM_LAYERS, top to bottom; README "Source layout"). Every folder is on the
# include path, so the compiler does not stop a lower layer from reaching up; this test does.
#   layering.sh SOURCE_DIR "LAYERS" NM OBJECT...
# 1. Includes: each quoted #include of sim/*/*.[ch] is resolved the way the compiler does (the
#    including file's folder first, then the include path, which CMakeLists.txt sets in
#    SIM_LAYERS order); a header in a layer above the including file's fails, and so does a
#    header name found in two folders (which one a file gets would depend on the path's order).
# 2. Calls: every symbol an object of the build leaves undefined (nm's U: functions called, data
#    read) and another object of sim/ defines must be defined in the same layer or a lower one.
#    Symbols defined outside sim/ (libc, GLib, libyaml, json-glib, MPI) are not checked. nm reads
#    gcc's link-time-optimisation objects too, through binutils' LTO plugin.
# Prints every violation as FILE: what it uses (where that lives), and exits 1 if there is any.
set -euo pipefail
src="$1" layers="$2" nm="$3"
shift 3
[ $# -gt 0 ] || { echo "layering: no object files given" >&2; exit 2; }
objects=() # CTest passes $<TARGET_OBJECTS:...> as one ;-separated argument
for arg in "$@"; do
    IFS=';' read -ra list <<<"$arg"
    for o in "${list[@]}"; do objects+=("$(realpath "$o")"); done
done
cd "$src"

# --- includes: "FILE:LINE HEADER" for each quoted include, resolved to a layer by awk below ---
includes=$(grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+"' sim/*/*.[ch] |
    sed -E 's/^([^:]+):([0-9]+):.*"([^"]+)".*/\1 \2 \3/')
headers=$(ls sim/*/*.h)

inc_report=$(awk -v layers="$layers" -v headers="$headers" '
BEGIN {
    n = split(layers, order, " ")
    for (i = 1; i <= n; i++) rank[order[i]] = i # 1: the top layer
    m = split(headers, hs, "\n")
    for (i = 1; i <= m; i++) {
        split(hs[i], p, "/")             # sim LAYER NAME
        if (p[3] in home) home[p[3]] = home[p[3]] " " p[2]
        else home[p[3]] = p[2]
    }
}
{
    file = $1; line = $2; hdr = $3
    split(file, p, "/"); from = p[2]
    if (!(from in rank)) { printf "%s: folder %s is not in SIM_LAYERS\n", file, from; next }
    if (index(hdr, "/")) next            # a path, not a header of the layer folders
    if (!(hdr in home)) next             # a header from outside sim/
    if (index(home[hdr], " ")) {
        printf "%s:%s: includes %s, which is in several folders (%s)\n", file, line, hdr, home[hdr]
        next
    }
    to = home[hdr]
    if (!(to in rank)) { printf "%s: folder %s is not in SIM_LAYERS\n", "sim/" to "/" hdr, to; next }
    if (rank[to] < rank[from])
        printf "%s:%s: includes %s from sim/%s/, a layer above %s\n", file, line, hdr, to, from
}' <<<"$includes")
n_includes=$(wc -l <<<"$includes")

# --- calls: nm -A -P prints "OBJECT: SYMBOL TYPE [VALUE SIZE]" ---
syms=$("$nm" -A -P "${objects[@]}")
call_report=$(awk -v layers="$layers" '
BEGIN { n = split(layers, order, " "); for (i = 1; i <= n; i++) rank[order[i]] = i }
{
    obj = $1; sub(/:$/, "", obj)
    if (!match(obj, /sim\/[a-z_0-9]+\/[^\/]+\.o$/)) next
    file = substr(obj, RSTART, RLENGTH - 2)   # sim/LAYER/NAME.c
    split(file, p, "/")
    if (!(p[2] in rank)) { bad[file] = 1; next }
    files[file] = p[2]
    sym = $2; type = $3
    if (type == "U") uses[file, sym] = 1
    else if (type ~ /^[A-TV-Z]$/) { defd[sym] = file } # global: T D B R C W V G S I
}
END {
    for (f in bad) printf "%s: folder not in SIM_LAYERS\n", f
    for (k in uses) {
        split(k, q, SUBSEP); f = q[1]; s = q[2]
        if (!(s in defd)) continue          # outside sim/
        d = defd[s]
        if (rank[files[d]] < rank[files[f]])
            printf "%s: uses %s, defined in %s (%s), a layer above %s\n", f, s, d, files[d], files[f]
        nref++
    }
    if (length(files) == 0 || length(defd) == 0) print "layering: nm found no symbols in the objects"
    printf "=stats %d objects, %d references between their files\n", length(files), nref
}' <<<"$syms")

stats=$(sed -n 's/^=stats //p' <<<"$call_report")
report=$(printf '%s\n%s\n' "$inc_report" "$call_report" | sed '/^$/d; /^=stats /d' | sort)
if [ -n "$report" ]; then
    echo "layering: these reach up the layers ($layers, top to bottom):"
    echo "$report"
    echo "layering: $(wc -l <<<"$report") violation(s)"
    exit 1
fi
echo "layering: ok: $n_includes quoted includes of sim/*/*.[ch]; $stats; layers $layers"
