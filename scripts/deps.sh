#!/usr/bin/env bash
# Installs every Debian package memledger's build, tests and benchmarks need. Idempotent:
# packages already present are left alone, so a second run costs a dpkg query and nothing else.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libunwind-dev            # stacks (dlopen'ed by the preload library, see docs/platform.md)
  libsqlite3-dev sqlite3   # the recording; sqlite3 is also a traced program in the tests
  libzstd-dev              # recordings are compressed when the recorder finishes
  nlohmann-json3-dev       # every JSON in and out
  libcli11-dev             # the command line
  libdw-dev libelf-dev     # DWARF symbolization (inline frames), as perf and hotspot use
  dwz                      # tests: debug info shared through .gnu_debugaltlink, as Debian ships it
  libprotobuf-dev protobuf-compiler zlib1g-dev  # pprof export (gzipped profile.proto)
  libgtest-dev libgmock-dev                     # tests
  python3 python3-jsonschema                    # tests: traced program, report schema validation
  clang libclang-rt-14-dev                      # the libFuzzer target over the recording reader
  heaptrack                                     # the peer in bench/
  libjemalloc-dev libgoogle-perftools-dev       # tests: programs linked against jemalloc/tcmalloc
)
if [[ "${MEMLEDGER_DEPS_GUI:-1}" == 1 ]]; then
  PACKAGES+=(qt6-base-dev qt6-charts-dev qt6-svg-dev qt6-qpa-plugins libqt6opengl6-dev libxkbcommon-dev xvfb xauth)
fi
if [[ "${MEMLEDGER_DEPS_BENCH:-0}" == 1 ]]; then
  PACKAGES+=(python3-torch)   # bench/ torch_mlp workload (~600 MB, so only on request)
  PACKAGES+=(heaptrack-gui xdotool)  # bench/gui_speed.sh: heaptrack_gui timed to its first screen under xvfb
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
