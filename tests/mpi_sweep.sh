#!/usr/bin/env bash
# sim sweep under MPI (a build with -DSIM_MPI=ON): `mpirun -n 2 sim sweep ...` on this machine
# writes the same bytes as a serial sweep, in CSV and JSON lines, to stdout and to a file, and
# resumes a cut file like a single process.
# Usage: mpi_sweep.sh MPIEXEC PATH/TO/sim SOURCE_DIR
#
# Open MPI in a container, as root, on a fresh machine needs some settings, all set here:
# root must be allowed; the isolated launcher starts local ranks without ssh (which a fresh
# machine lacks); two ranks may oversubscribe a small machine; shared memory (vader) without
# cross-memory attach (ptrace is often not permitted) and no binding (cgroup cpusets); the ob1
# messaging layer instead of UCX/verbs probing for network cards that are not there.
set -u
mpiexec="$1"; sim="$2"; src="$3"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm=isolated OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_mpi_yield_when_idle=1
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
mpi() { timeout 300 "$mpiexec" -n "$@"; }
s="$src/scenarios"
v=(--vary nodes=1,2,4,16 --vary parallel.zero=1,3 --vary training.seq_len=1024,2048)

for fmt in csv json; do
    "$sim" sweep "$s/13B_tp8.yaml" "${v[@]}" -f "$fmt" -j 1 -o "$tmp/serial.$fmt"
    if mpi 2 "$sim" sweep "$s/13B_tp8.yaml" "${v[@]}" -f "$fmt" -o "$tmp/mpi.$fmt" 2>"$tmp/err"
    then ok; else bad "mpirun -n 2 ($fmt) failed:"; cat "$tmp/err"; fi
    cmp -s "$tmp/serial.$fmt" "$tmp/mpi.$fmt" && ok || bad "2 ranks ($fmt, file) differ from serial"
    mpi 2 "$sim" sweep "$s/13B_tp8.yaml" "${v[@]}" -f "$fmt" -j 2 >"$tmp/mpi-stdout.$fmt" 2>"$tmp/err"
    cmp -s "$tmp/serial.$fmt" "$tmp/mpi-stdout.$fmt" && ok ||
        { bad "2 ranks x 2 threads ($fmt, stdout) differ from serial"; cat "$tmp/err"; }
done
# more ranks than some ranks have points; and a resumed file
mpi 3 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -o "$tmp/three.csv" 2>"$tmp/err"
"$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -o "$tmp/one.csv"
cmp -s "$tmp/one.csv" "$tmp/three.csv" && ok || { bad "3 ranks, 2 points"; cat "$tmp/err"; }
{ head -1 "$tmp/serial.csv"; sed -n '5p;9p;2p' "$tmp/serial.csv"; } >"$tmp/cut.csv"
cp "$tmp/serial.csv.resume" "$tmp/cut.csv.resume" # the record of the sweep that wrote it
mpi 2 "$sim" sweep "$s/13B_tp8.yaml" "${v[@]}" -o "$tmp/cut.csv" --resume 2>"$tmp/err"
grep -q "kept 3 finished rows, running 13 more" "$tmp/err" && ok || { bad "mpi resume note"; cat "$tmp/err"; }
cmp -s "$tmp/serial.csv" "$tmp/cut.csv" && ok || bad "mpi resume differs from serial"
echo "mpi_sweep: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
