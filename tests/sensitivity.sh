#!/usr/bin/env bash
# sim sensitivity on the command line: the compute scale, the sustained clock and the GEMM ceiling
# multiply the same rate, so moving each by the same fraction changes the iteration time by exactly
# as much (to the printed digit); a constant the files lack is not listed; the output does not
# depend on --jobs; bad input exits 2.
#   tests/sensitivity.sh SIM SOURCE_DIR
sim="$1"; src="$2"
source "$(dirname "$0")/lib.sh"
cd "$src" || exit 1

check "table" 0 "$sim" sensitivity scenarios/1.3B_ddp.yaml --jobs 1
cp "$tmp/out" "$tmp/j1.txt"
expect_grep "header" '^sensitivity of scenarios/1.3B_ddp.yaml: iteration' "$tmp/out"
scale=$(awk '$1=="topology.device.calibration.compute_scale"{print $3, $4}' "$tmp/out")
clock=$(awk '$1=="topology.device.sustained_clock"{print $3, $4}' "$tmp/out")
ceil=$(awk '$1=="topology.device.gemm.ceiling"{print $3, $4}' "$tmp/out")
[ -n "$scale" ] && [ "$scale" = "$clock" ] && [ "$scale" = "$ceil" ] && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL compute rate: scale '$scale' clock '$clock' ceiling '$ceil'"; }
# slower compute, longer iteration: 'down' is positive
case "$scale" in +*) pass=$((pass + 1)) ;; *) fail=$((fail + 1)); echo "FAIL sign: $scale" ;; esac
# the model file has no bmm_ceiling key: not listed
if grep -q 'bmm_ceiling' "$tmp/out"; then fail=$((fail + 1)); echo "FAIL bmm_ceiling listed"; else pass=$((pass + 1)); fi
check "jobs 2" 0 "$sim" sensitivity scenarios/1.3B_ddp.yaml --jobs 2
cmp -s "$tmp/out" "$tmp/j1.txt" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL jobs change the table"; }
check "bad by" 2 "$sim" sensitivity scenarios/1.3B_ddp.yaml --by 2
check "no scenario" 2 "$sim" sensitivity
check "bad set" 2 "$sim" sensitivity scenarios/1.3B_ddp.yaml --set model.nothing=1
finish sensitivity_cli
