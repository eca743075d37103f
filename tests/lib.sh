# Shared helpers of the shell tests (sourced): a scratch folder, counters, and two checks.
# Each test script ends with `finish`, which prints "NAME: N passed, N failed" and sets the status.
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
check() { # name, expected status, command...: runs it with stdout in $tmp/out, stderr in $tmp/err
    local name="$1" want="$2"; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
    if [ "$got" -eq "$want" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL $name: exit $got, want $want"; cat "$tmp/err"; fi
}
expect_grep() { # name, pattern, file
    if grep -q -- "$2" "$3"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL $1: '$2' not in $3:"; head -c 2000 "$3"; fi
}
finish() { # name
    echo "$1: $pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
on_off_same() { # switch, args...: one scenario run as given and with `--set switch=false` into
    # $tmp/on.json and $tmp/off.json; their reports, through the caller's `strip`, must be the same
    # lines. Status 1 where the first run fails (counted), else 0.
    local sw="$1"; shift
    # shellcheck disable=SC2068
    if ! "$sim" $@ -f json --no-timing >"$tmp/on.json" 2>"$tmp/err"; then
        fail=$((fail + 1)); echo "FAIL run: $*"; cat "$tmp/err"; return 1
    fi
    # shellcheck disable=SC2068
    "$sim" $@ -f json --no-timing --set "$sw=false" >"$tmp/off.json" 2>&1
    if diff <(strip "$tmp/on.json") <(strip "$tmp/off.json") >"$tmp/diff"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL reports differ: $*"; head -20 "$tmp/diff"
    fi
    return 0
}
every_layout() { # fn: calls fn with each shipped scenario but the whole machine with every rank
    # (minutes), then with each distinct command of the validation rows (e2e, study trends)
    local f cmd
    for f in scenarios/*.yaml; do
        case "$f" in *1T_full_frontier*) continue ;; esac
        "$1" "$f"
    done
    while IFS= read -r cmd; do
        "$1" "$cmd"
    done < <(python3 - <<'PY'
import csv
seen = []
for f in ("validation/e2e.csv", "validation/study-trends.csv"):
    for r in csv.DictReader(open(f)):
        for c in r["command"].split(";;"):
            c = c.strip()
            if c not in seen:
                seen.append(c)
print("\n".join(seen))
PY
)
}
