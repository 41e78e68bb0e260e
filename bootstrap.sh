#!/usr/bin/env bash
# Install what goopt needs (Debian/Ubuntu), configure and build it in build/, then run the demo or
# the tests.  Usage: ./bootstrap.sh demo|test|build [--clean]
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: ./bootstrap.sh demo|test|build [--clean]
  build    install missing Debian packages, configure and build everything in build/
  test     build, then run all tests with ctest
  demo     build, then run build/examples/resnet_block
  --clean  delete build/ first
USAGE
}

command=""
clean=0
for arg in "$@"; do
    case "$arg" in
        demo | test | build)
            if [[ -n "$command" ]]; then usage >&2; exit 2; fi
            command="$arg" ;;
        --clean) clean=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "bootstrap.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -z "$command" ]]; then usage >&2; exit 2; fi

cd "$(dirname "${BASH_SOURCE[0]}")"

# ---- 1. required packages ----
required=(g++ cmake make libeigen3-dev libboost-graph-dev libxtensor-dev nlohmann-json3-dev
          doctest-dev ccache
          libonnx-dev libprotobuf-dev  # ONNX import (goopt::onnx); protoc is not needed
          libmetis-dev)                # METIS placement baseline (goopt::metis)
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
if ((clean)); then rm -rf build; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
      -DGOOPT_BUILD_TESTS=ON -DGOOPT_BUILD_EXAMPLES=ON -DGOOPT_BUILD_BENCHMARKS=ON
cmake --build build -j"$(nproc)"

# ---- 3. run ----
case "$command" in
    build) ;;
    test)
        exec ctest --test-dir build --output-on-failure ;;
    demo)
        demo=build/examples/resnet_block
        if [[ ! -x "$demo" ]]; then
            if compgen -G 'examples/[0-9]*_resnet_block.cpp' >/dev/null; then
                echo "bootstrap.sh: error: $demo was not built (see the build output above)" >&2
            else
                echo "bootstrap.sh: error: $demo is not built yet: its source," \
                     "examples/NN_resnet_block.cpp, does not exist yet" >&2
            fi
            exit 1
        fi
        exec "$demo" ;;
esac
