# Shared set-up for tools/sim, tools/test and tools/bench (sourced, not run).
# Installs the Debian packages the build needs when they are missing, then configures and builds
# into a build folder. Everything a fresh Debian machine lacks is installed here, nothing by hand.

SIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# libjson-glib-dev: `sim import` reads DeepSpeed and Hugging Face JSON configs
SIM_PACKAGES=(gcc make cmake pkg-config libglib2.0-dev libyaml-dev libjson-glib-dev check)
# tools/plot: gnuplot with its cairo PNG terminal, no X11 (about 1 MB)
SIM_PLOT_PACKAGES=(gnuplot-nox)
# tools/test besides: the plot test, and Open MPI for the MPI build of `sim sweep` and its 2-rank
# test (json-glib, which the suites also use to read the JSON the simulator writes, is a build
# package above)
SIM_TEST_PACKAGES=("${SIM_PLOT_PACKAGES[@]}" openmpi-bin libopenmpi-dev)
# tools/fuzz: clang with its runtime libraries (libFuzzer and the sanitizers, only recommended by
# clang, so named) and llvm-symbolizer for readable stack traces
SIM_FUZZ_PACKAGES=(clang libclang-rt-dev llvm)

sim_log() { printf '%s\n' "$*" >&2; }

# sim_install_deps [PACKAGE...]: the build's packages and any named, when missing.
sim_install_deps() {
    local missing=()
    if command -v dpkg-query >/dev/null 2>&1; then
        local p
        for p in "${SIM_PACKAGES[@]}" "$@"; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
                || missing+=("$p")
        done
    else
        command -v cmake >/dev/null && command -v pkg-config >/dev/null \
            && pkg-config --exists glib-2.0 yaml-0.1 json-glib-1.0 check || {
            sim_log "setup: not a Debian system; install cmake, pkg-config, GLib, libyaml, json-glib and Check"
            return 1
        }
    fi
    [ ${#missing[@]} -eq 0 ] && return 0
    sim_log "setup: installing ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { sim_log "setup: need root (or sudo) to install ${missing[*]}"; return 1; }
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >&2 || return 1
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || return 1
}

# sim_build DIR [cmake args...]: configure DIR once, then build it (incremental): every target
# (the simulator and the test programs), or only the simulator when SIM_BUILD_TARGET=sim
# (tools/sim: the tests belong to tools/test). Says on stderr what it does when it compiles.
# Times measured on a shared 2-core host (the README's "Two commands").
sim_build() {
    local dir="$1"; shift
    local log="$dir/.setup.log" target=() what="the simulator and the test programs" first="5-10 min"
    local made="$dir/tests/test_engine" # a test program: built with the rest, not by tools/sim
    if [ "${SIM_BUILD_TARGET:-}" = sim ]; then
        target=(--target sim); what="the simulator (not the tests: tools/test builds those)"; first="1-2 min"
        made="$dir/sim"
    fi
    mkdir -p "$dir"
    # a cache without a build file is a configure that failed (say, run before the packages were
    # installed): configure again rather than build nothing
    if [ ! -f "$dir/CMakeCache.txt" ] || { [ ! -f "$dir/Makefile" ] && [ ! -f "$dir/build.ninja" ]; }; then
        sim_log "build: configuring $dir (cmake)"
        if ! cmake -S "$SIM_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$log" 2>&1; then
            cat "$log" >&2; return 1
        fi
    fi
    local start=$SECONDS
    if [ ! -x "$made" ]; then
        sim_log "build: compiling $what into $dir (first time about $first on 2 free cores, more on a busy host) ..."
    elif [ -n "$(find "$SIM_ROOT/sim" "$SIM_ROOT/tests" "$SIM_ROOT/CMakeLists.txt" -newer "$made" \
                 -print -quit 2>/dev/null)" ]; then
        sim_log "build: compiling what changed into $dir ..."
    else
        start=""
    fi
    if ! cmake --build "$dir" "${target[@]}" -j "$(nproc 2>/dev/null || echo 2)" >"$log" 2>&1; then
        cat "$log" >&2; return 1
    fi
    [ -n "$start" ] && sim_log "build: done in $((SECONDS - start)) s"
    return 0
}
