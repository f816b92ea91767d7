#!/usr/bin/env bash
# Sets detkit up on Debian 12 and builds it in ./build:
# - the Debian packages below (compilers, image and data libraries; no torch, BLAS or oneDNN);
# - the Python environment with the one torch detkit builds on and loads (PyPI's torch 2.11.0,
#   CUDA 13.0 build): the active Python when it already has torch 2.11.x (nothing is installed
#   into it then), else .venv/ at the repository root from requirements.txt (pip's cache and an
#   existing .venv are reused);
# - cmake against that torch, and the build.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PACKAGES=(
  cmake ninja-build g++ ccache
  libgloo-dev  # the Gloo headers c10d's ProcessGroupGloo.hpp includes (torch's wheel has none)
  libopencv-dev libturbojpeg0-dev libpng-dev libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev
  libcli11-dev libspdlog-dev libfmt-dev libgtest-dev libcurl4-openssl-dev
  libprotobuf-dev protobuf-compiler  # TensorBoard event files
  python3-dev python3-venv  # Debian's python3, where it is the one on PATH
  clang-14 libclang-rt-14-dev  # the libFuzzer builds of fuzz/ (ASan + UBSan)
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

torch_version() { "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null || true; }
PYTHON="$(command -v python3)"
case "$(torch_version "$PYTHON")" in
  2.11.*) echo "setup: building on the active Python's torch $(torch_version "$PYTHON") ($PYTHON)" ;;
  *)
    [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
    PYTHON="$PWD/.venv/bin/python"
    "$PYTHON" -m pip install --disable-pip-version-check -q -r requirements.txt
    echo "setup: building on .venv's torch $(torch_version "$PYTHON")"
    ;;
esac

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDETKIT_PYTHON="$PYTHON"
cmake --build build
