#!/usr/bin/env bash
# layering_selftest: tests/layering.sh on a planted two-layer tree (up above down), so that a
# checker that stopped seeing violations fails here rather than passing everything.
#   layering_selftest.sh CC NM
# A clean tree (up includes and calls down) must pass; down including up's header and calling up's
# function must fail, naming the file, the header and the symbol.
set -euo pipefail
cc="$1" nm="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/sim/up" "$tmp/sim/down" "$tmp/obj/sim/up" "$tmp/obj/sim/down"
cat >"$tmp/sim/down/low.h" <<'EOF'
int low_fn(int x);
EOF
cat >"$tmp/sim/up/high.h" <<'EOF'
int high_fn(int x);
EOF
cat >"$tmp/sim/up/high.c" <<'EOF'
#include "high.h"
#include "low.h"
int high_fn(int x) { return low_fn(x) + 1; }
EOF
cat >"$tmp/sim/down/low.c" <<'EOF'
#include "low.h"
int low_fn(int x) { return 2 * x; }
EOF
build() {
    for f in up/high down/low; do
        "$cc" -c -I"$tmp/sim/up" -I"$tmp/sim/down" "$tmp/sim/$f.c" -o "$tmp/obj/sim/$f.c.o"
    done
}
objs=("$tmp/obj/sim/up/high.c.o" "$tmp/obj/sim/down/low.c.o")

build
if ! out=$("$here/layering.sh" "$tmp" "up down" "$nm" "${objs[@]}" 2>&1); then
    echo "layering_selftest: a clean tree failed:"; echo "$out"; exit 1
fi

cat >"$tmp/sim/down/low.c" <<'EOF'
#include "low.h"
#include "high.h"
int low_fn(int x) { return x > 0 ? high_fn(x - 1) : 0; }
EOF
build
if out=$("$here/layering.sh" "$tmp" "up down" "$nm" "${objs[@]}" 2>&1); then
    echo "layering_selftest: an upward include and call passed:"; echo "$out"; exit 1
fi
for want in "sim/down/low.c:2: includes high.h from sim/up/" \
            "sim/down/low.c: uses high_fn, defined in sim/up/high.c (up)"; do
    if ! grep -qF "$want" <<<"$out"; then
        echo "layering_selftest: the report lacks '$want':"; echo "$out"; exit 1
    fi
done
echo "layering_selftest: ok (a planted upward include and call are reported)"
