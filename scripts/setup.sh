#!/usr/bin/env bash
# Installs detkit's Debian 12 dependencies (nothing else is downloaded) and builds it in ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PACKAGES=(
  cmake ninja-build g++ ccache
  libtorch-dev libgloo-dev libopenblas0-pthread libopenblas0-openmp libdnnl-dev
  libopencv-dev libturbojpeg0-dev libsimdjson-dev nlohmann-json3-dev libyaml-cpp-dev
  libcli11-dev libspdlog-dev libfmt-dev libgtest-dev libcurl4-openssl-dev
  libprotobuf-dev protobuf-compiler  # TensorBoard event files
  python3-torchvision python3-protobuf python3-crc32c  # oracles: torchvision; a TensorBoard reader
  pybind11-dev python3-dev python3-numpy python3-pil  # the `detkit` Python package and its tests
  clang-14 libclang-rt-14-dev  # the libFuzzer builds of fuzz/ (ASan + UBSan)
  python3-onnx  # `detkit export --format onnx`'s tests: onnx.checker
)
# ONNX Runtime runs on Node.js (npm's onnxruntime-node, below): Debian's, where the machine has none.
command -v node >/dev/null && command -v npm >/dev/null || PACKAGES+=(nodejs npm)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
# ONNX Runtime for the export tests and benchmark: onnxruntime-node at the version
# scripts/onnxruntime/package-lock.json pins, from the npm registry, without its install script
# (which only fetches GPU libraries; the CPU library is in the package).
mkdir -p build/onnxruntime
cp scripts/onnxruntime/package.json scripts/onnxruntime/package-lock.json build/onnxruntime/
(cd build/onnxruntime && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
