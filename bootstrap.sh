#!/usr/bin/env bash
# Install what goopt needs (Debian/Ubuntu), configure and build it in build/, then run the demo or
# the tests; or build the sanitizer or fuzzing configurations and run them.
# Usage: ./bootstrap.sh demo|test|build|pretrain|sanitize|fuzz [SECONDS]|format|format-check|ort [--clean]
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: ./bootstrap.sh demo|test|build|pretrain|sanitize|fuzz [SECONDS]|format|format-check|ort [--clean]
  build     install missing Debian packages, configure and build everything in build/
  test      build, then run all tests with ctest
  demo      build the goopt program and its rule library, then run 'goopt optimize' on a built-in model and cluster:
            prints the table, writes build/result.json, build/timeline.svg and build/curve.svg
  pretrain  build the goopt program, then make share/goopt/placement_policy.ckpt, the placement policy goopt
            ships, with 'goopt train' (the command below; docs/transfer.md): the same file, byte for
            byte, on the same binary and machine
  sanitize  build the tests and the goopt program with AddressSanitizer + UndefinedBehaviorSanitizer in
            build-asan/ (-Og; no examples or benchmarks), then run the tests with ctest; any report fails
  fuzz      build the libFuzzer harnesses with clang in build-fuzz/, then run each for SECONDS
            (default 60) from its seed corpus tests/data/fuzz/<reader>/ with libFuzzer -seed=$GOOPT_FUZZ_SEED
            (default 1: the same run every time; 0: a random one), one harness per processor at a time;
            any finding fails
  format    apply .clang-format (clang-format 14) to every tracked C++ file
  format-check
            list the tracked C++ files that differ from .clang-format and fail if there are any
  ort       install onnxruntime for Node.js (tools/ort: onnxruntime-node as package-lock.json pins it,
            'npm ci --ignore-scripts': the CPU library ships in the package, its install script would
            download GPU binaries), for the ONNX round-trip tests; Debian's nodejs and npm if missing
  --clean   delete the command's build directory first (ort: tools/ort/node_modules)
environment: GOOPT_QUICK_PROGRAMS=ON (build, test) compiles the examples and benchmarks at -O1 without
            -march=native, about 40 % faster; their timings then mean nothing (CI sets it: it only runs
            them to check them)
USAGE
}

command=""
clean=0
fuzz_seconds=60
for arg in "$@"; do
    case "$arg" in
        demo | test | build | pretrain | sanitize | fuzz | format | format-check | ort)
            if [[ -n "$command" ]]; then usage >&2; exit 2; fi
            command="$arg" ;;
        --clean) clean=1 ;;
        -h | --help) usage; exit 0 ;;
        *)
            if [[ "$command" == fuzz && "$arg" =~ ^[1-9][0-9]*$ ]]; then
                fuzz_seconds="$arg"
            else
                echo "bootstrap.sh: unknown argument '$arg'" >&2; usage >&2; exit 2
            fi ;;
    esac
done
if [[ -z "$command" ]]; then usage >&2; exit 2; fi

cd "$(dirname "${BASH_SOURCE[0]}")"

# ---- 1. required packages ----
required=(g++ cmake make libeigen3-dev libboost-graph-dev libxtensor-dev nlohmann-json3-dev
          doctest-dev ccache
          libonnx-dev libprotobuf-dev  # ONNX import and export (goopt::onnx); protoc is not needed
          python3-onnx                 # the export test checks its files with onnx.checker (full_check)
          libmetis-dev                 # METIS placement baseline (goopt::metis)
          coinor-libcbc-dev pkg-config # Tensat's ILP extraction (goopt::cbc)
          libcli11-dev)                # the flags of the goopt program and the benchmarks (CLI11)
if [[ "$command" == build || "$command" == test ]]; then
    required+=(libopenmpi-dev openmpi-bin)  # goopt::mpi: its tests run under mpirun (tests/mpi/)
fi
if [[ "$command" == format || "$command" == format-check ]]; then
    required=(clang-format git)  # formatting needs nothing else
fi
if [[ "$command" == fuzz ]]; then
    required+=(clang libclang-rt-14-dev)  # libFuzzer and clang's sanitizer runtimes (Debian 12: clang 14)
fi
if [[ "$command" == ort ]]; then
    required=()  # Node.js and npm, unless some other package (NodeSource's nodejs) gives them already
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then required=(nodejs npm); fi
fi
if command -v dpkg-query >/dev/null 2>&1; then
    missing=()
    for pkg in "${required[@]}"; do
        status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
        if [[ "$status" != "install ok installed" ]]; then missing+=("$pkg"); fi
    done
    if ((${#missing[@]} > 0)); then
        if [[ $(id -u) -eq 0 ]]; then
            as_root=()
        elif command -v sudo >/dev/null 2>&1; then
            as_root=(sudo)
        else
            echo "bootstrap.sh: error: not root and sudo is not available; as root, run:" >&2
            echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
            exit 1
        fi
        echo "bootstrap.sh: installing missing packages: ${missing[*]}"
        "${as_root[@]}" apt-get update
        "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y --no-install-recommends "${missing[@]}"
    fi
else
    echo "bootstrap.sh: dpkg-query not found (not Debian/Ubuntu); make sure these are installed:" \
         "${required[*]}" >&2
fi

# ---- 2. configure and build ----
# Sanitizer reports abort the program (so they fail its test) and print a symbolized stack.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_init_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
case "$command" in
    format | format-check)
        mapfile -t sources < <(git ls-files '*.hpp' '*.cpp' ':!tests/data/**')
        if [[ "$command" == format ]]; then exec clang-format -i "${sources[@]}"; fi
        # 40 files per clang-format, one per processor at a time: a file that differs is named in
        # the warnings --dry-run prints ("<file>:<line>:<col>: error: code should be clang-formatted")
        report=$(mktemp)
        trap 'rm -f "$report"' EXIT
        format_status=0
        printf '%s\0' "${sources[@]}" | xargs -0 -n 40 -P "$(nproc)" clang-format --dry-run --Werror \
            >"$report" 2>&1 || format_status=$?
        mapfile -t unformatted < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' \
            "$report" | sort -u)
        if ((format_status != 0 && ${#unformatted[@]} == 0)); then  # clang-format failed otherwise
            cat "$report" >&2
            echo "bootstrap.sh: clang-format failed (status $format_status)" >&2
            exit 1
        fi
        if ((${#unformatted[@]} > 0)); then
            echo "bootstrap.sh: these files differ from .clang-format (run ./bootstrap.sh format):" >&2
            printf '  %s\n' "${unformatted[@]}" >&2
            exit 1
        fi
        echo "bootstrap.sh: ${#sources[@]} files follow .clang-format"
        exit 0 ;;
    sanitize)
        # -Og -g1: a fifth less compile time than -O1 (the tasks tests: 113 s against 144 s), stacks
        # still name file and line. The examples and benchmarks are left out (the tests cover the
        # library code they call; the normal build runs them); header checks and the package consumer
        # test are compile/install checks that the normal build already makes.
        if ((clean)); then rm -rf build-asan; fi
        cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1" \
              -DGOOPT_SANITIZE=ON -DGOOPT_NATIVE=OFF -DGOOPT_BUILD_TESTS=ON -DGOOPT_BUILD_EXAMPLES=OFF \
              -DGOOPT_BUILD_BENCHMARKS=OFF -DGOOPT_HEADER_CHECKS=OFF
        cmake --build build-asan -j"$(nproc)"
        exec ctest --test-dir build-asan --output-on-failure --label-exclude package -j"$(nproc)" ;;
    ort)
        # onnxruntime-node as tools/ort/package-lock.json pins it, never its install script
        if ((clean)); then rm -rf tools/ort/node_modules; fi
        (cd tools/ort && npm ci --ignore-scripts --no-audit --no-fund)
        exec node -e "const o = require('./tools/ort/node_modules/onnxruntime-node'); console.log('bootstrap.sh: onnxruntime-node ' + o.env.versions.node + ' (CPU) in tools/ort')" ;;
    fuzz)
        if ((clean)); then rm -rf build-fuzz; fi
        cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
              "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DGOOPT_BUILD_FUZZERS=ON -DGOOPT_NATIVE=OFF \
              -DGOOPT_BUILD_TESTS=OFF -DGOOPT_BUILD_EXAMPLES=OFF -DGOOPT_BUILD_BENCHMARKS=OFF -DGOOPT_BUILD_PROGRAM=OFF
        cmake --build build-fuzz -j"$(nproc)"
        # One harness per processor at a time (libFuzzer runs on one thread): each still gets SECONDS
        # of its own, and the step takes ceil(harnesses / nproc) x SECONDS instead of their sum.
        fuzz_seed="${GOOPT_FUZZ_SEED:-1}"
        readers=()
        for harness in build-fuzz/tests/fuzz/goopt_fuzz_*; do
            [[ -x "$harness" ]] || continue
            reader="${harness##*/goopt_fuzz_}"
            readers+=("$reader")
            seeds="tests/data/fuzz/$reader"
            corpus="build-fuzz/corpus/$reader"       # new inputs go here, never into the source tree
            artifacts="build-fuzz/artifacts/$reader/"
            mkdir -p "$corpus" "$artifacts"
            dict=()
            if [[ -f "tests/fuzz/$reader.dict" ]]; then dict=(-dict="tests/fuzz/$reader.dict"); fi
            # a fixed libFuzzer seed (GOOPT_FUZZ_SEED, default 1) makes CI's run the same every time;
            # explore with GOOPT_FUZZ_SEED=0 (libFuzzer draws one) and add what it finds to the corpus
            echo "bootstrap.sh: fuzzing $reader for ${fuzz_seconds}s, -seed=$fuzz_seed (seeds: $seeds)"
            while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
            # -timeout: one input may take 10 s; -rss_limit_mb: 2 GB; leaks count as findings
            # (libFuzzer prints a line per new input: the whole log goes to a file, its exit status
            # to build-fuzz/<reader>.status; the end of the log goes to the screen below)
            rm -f "build-fuzz/$reader.status"
            (
                status=0
                "$harness" -seed="$fuzz_seed" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
                    -print_final_stats=1 "${dict[@]}" -artifact_prefix="$artifacts" "$corpus" "$seeds" \
                    >"build-fuzz/$reader.log" 2>&1 || status=$?
                echo "$status" >"build-fuzz/$reader.status"
            ) &
        done
        wait
        failed=()
        for reader in "${readers[@]}"; do
            log="build-fuzz/$reader.log"
            if [[ "$(cat "build-fuzz/$reader.status" 2>/dev/null)" == 0 ]]; then
                echo "bootstrap.sh: $reader:"
                grep -E '^(stat::|Done )|DONE ' "$log" || true
            else
                echo "bootstrap.sh: $reader failed:"
                tail -n 60 "$log"
                failed+=("$reader")
            fi
        done
        if ((${#failed[@]} > 0)); then
            echo "bootstrap.sh: fuzzing found problems in: ${failed[*]}; the inputs are in build-fuzz/artifacts/<reader>/;" \
                 "fix the reader and add each input to tests/data/fuzz/<reader>/regressions/" >&2
            exit 1
        fi
        exit 0 ;;
esac
if ((clean)); then rm -rf build; fi
# GOOPT_QUICK_PROGRAMS=ON (CI's setting) compiles the examples and benchmarks at -O1: they are only
# checked to build and run; given every time, so that a build folder never keeps it by accident
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
      -DGOOPT_BUILD_TESTS=ON -DGOOPT_BUILD_EXAMPLES=ON -DGOOPT_BUILD_BENCHMARKS=ON \
      -DGOOPT_QUICK_PROGRAMS="${GOOPT_QUICK_PROGRAMS:-OFF}"
if [[ "$command" == demo || "$command" == pretrain ]]; then
    # the demo needs the program; the rule library (half a minute) is what `goopt superopt` tries next
    cmake --build build -j"$(nproc)" --target goopt_program goopt_rules
else
    cmake --build build -j"$(nproc)"
fi

# ---- 3. run ----
case "$command" in
    build) ;;
    pretrain)
        # README's training split on 2, 4 and 8 devices, 4 updates per (graph, cluster) in turn; no
        # time budget, so that the file depends on the binary and the seed alone
        set -x
        exec build/bin/goopt train --models transformer_xl2,wavenet_2x18,inception_v3_taso,transformer_xl4 \
            --clusters 2xV100:nvlink,4xV100:nvlink,8xV100:nvlink --head pair --steps 240 --updates-per-graph 4 \
            --seed 1 --quiet --checkpoint-out share/goopt/placement_policy.ckpt ;;
    test)
        # -j: tests that share files take a RESOURCE_LOCK (the program's cases, the MPI runs)
        exec ctest --test-dir build --output-on-failure -j"$(nproc)" ;;
    demo)
        if [[ ! -x build/bin/goopt ]]; then
            echo "bootstrap.sh: error: build/bin/goopt was not built (is libcli11-dev installed? see above)" >&2
            exit 1
        fi
        set -x
        exec build/bin/goopt optimize --model wavenet_2x18 --cluster 2xV100:nvlink --tasks placement --steps 300 --seed 1 \
            --out build/result.json --svg build/timeline.svg --curve build/curve.svg ;;
esac
