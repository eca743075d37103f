#!/usr/bin/env bash
# Every file a user names (sim -o, --trace, --print-scenario -o, --ops -o, sim import -o, sim
# search -o, sim sweep -o) goes through sim/output/outfile.c and behaves alike (issue 29; notes
# ux-reliability-3.md B2 defect 3: `sim import -o /dev/full` exited 0 and replaced the device
# node): a symbolic link is written through and kept, a device, a FIFO or a directory is refused
# with exit 1 and left as it was, a missing folder is exit 1, a full stdout is exit 1, and a file
# replaced keeps its permissions.
# Usage: output_files.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
s="$src/scenarios"; hf="$src/tests/import/hf_moe.json"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# each writer as a command line whose last word is the file written
writers=(
    "run|$sim $s/1.3B_ddp.yaml --no-timing -o"
    "trace|$sim $s/1.3B_ddp.yaml --no-timing --trace"
    "print|$sim $s/1.3B_ddp.yaml --print-scenario -o"
    "ops|$sim $s/1.3B_ddp.yaml --ops -o"
    "import|$sim import $hf -o"
    "search|$sim search $s/1.3B_ddp.yaml --nodes 1 -q -k 2 -o"
    "sweep|$sim sweep $s/1.3B_ddp.yaml --vary nodes=1 -q -o"
)
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"
have_dev=0
mknod "$tmp/dev" c 1 7 2>/dev/null && have_dev=1 # /dev/full's numbers; root only
for w in "${writers[@]}"; do
    n="${w%%|*}"; cmd="${w#*|}"
    # a symbolic link: written through, the link kept
    echo old >"$tmp/$n.real"; chmod 640 "$tmp/$n.real"; ln -s "$n.real" "$tmp/$n.link"
    check "$n-link" 0 $cmd "$tmp/$n.link"
    [ -L "$tmp/$n.link" ] && [ -s "$tmp/$n.real" ] && ! grep -qx old "$tmp/$n.real" && ok ||
        bad "$n-link: the link was replaced or its target not written"
    [ "$(stat -c %a "$tmp/$n.real")" = 640 ] && ok || bad "$n-link: permissions not kept"
    # a FIFO, a device, a directory: refused, exit 1, left as they were
    check "$n-fifo" 1 timeout 20 $cmd "$tmp/fifo"
    grep -q "fifo: not a regular file" "$tmp/err" && [ -p "$tmp/fifo" ] && ok || bad "$n-fifo: not refused"
    if [ "$have_dev" = 1 ]; then
        check "$n-dev" 1 $cmd "$tmp/dev"
        [ -c "$tmp/dev" ] && ok || bad "$n-dev: the device node was replaced"
    fi
    check "$n-dir" 1 $cmd "$tmp/dir"
    grep -q "dir: a directory" "$tmp/err" && ok || bad "$n-dir: message"
    check "$n-missing" 1 $cmd "$tmp/nope/x"
    ln -s nothing "$tmp/$n.dangling"
    check "$n-dangling" 1 $cmd "$tmp/$n.dangling"
    # no temporary file left behind
    [ -z "$(find "$tmp" -name '.*.??????' -print -quit)" ] && ok || bad "$n: a temporary file is left"
done
# a full stdout is exit 1 (sim import wrote the scenario with exit 0 there before)
if [ -w /dev/full ]; then
    for w in "run|$sim $s/1.3B_ddp.yaml --no-timing" "import|$sim import $hf" \
             "print|$sim $s/1.3B_ddp.yaml --print-scenario"; do
        n="${w%%|*}"; cmd="${w#*|}"
        $cmd >/dev/full 2>"$tmp/err"; st=$?
        [ "$st" -eq 1 ] && grep -q "standard output" "$tmp/err" && ok || bad "$n-full-stdout: exit $st"
    done
fi
# /dev/null is written to as it is: output thrown away on purpose
check null-import 0 "$sim" import "$hf" -o /dev/null
check null-trace 0 "$sim" "$s/1.3B_ddp.yaml" --trace /dev/null -o /dev/null
[ -c /dev/null ] && ok || bad "null: /dev/null is no longer a device"
# validate's baseline, the same way
mkdir "$tmp/v"
{ printf 'id,group,use,command,metric,measured,unit,source,setting,note\n'
  printf 'a,g,check,collective --op allreduce --ranks 16 --sizes 1MiB,time_us,100,us,s,x,y\n'; } >"$tmp/v/x.csv"
check baseline-fifo 1 timeout 20 "$sim" validate "$tmp/v" --write-baseline "$tmp/fifo"
finish output_files
