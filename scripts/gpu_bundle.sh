#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a GPU machine into gpu_bundle/ (ignored by git), for
# the `device` tool to carry. The GPU machines have python3 with torch 2.11.0+cu130 (the torch
# detkit builds on here), nvcc, cmake and ninja, but none of Debian's development packages and no
# network, so the check runs binaries built here (./scripts/setup.sh first) against that torch:
#   gpu_bundle/bin/   detkit and the test binaries the check runs (test_ops, test_modeling)
#   gpu_bundle/lib/   detkit's libraries, and every shared library they load that is neither
#                     torch's (torch/lib, nvidia/*) nor the C library's: yaml-cpp, fmt, spdlog,
#                     OpenCV and what it brings, libstdc++, ...
# Everything is stripped of debug symbols. The device tool carries at most 64 MiB with the
# working tree and shared/ (the fixtures): the script prints the bundle's size and its largest
# libraries, and exits 1 when the bundle alone is over that limit.
#
# Usage: scripts/gpu_bundle.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bundle=gpu_bundle
limit=$((64 * 1024 * 1024))

binaries=("$build/tools/detkit" "$build/tests/ops/test_ops" "$build/tests/modeling/test_modeling")
for b in "${binaries[@]}"; do
  [[ -x $b ]] || { echo "gpu_bundle: $b is missing: build first (./scripts/setup.sh)" >&2; exit 1; }
done

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
cp "${binaries[@]}" "$bundle/bin/"
find "$build" -name 'libdetkit_*.so*' -not -path '*/CMakeFiles/*' -exec cp -P {} "$bundle/lib/" \;

# The C library and its loader come from the GPU machine; torch and CUDA from its python3.
system='/(libc|libm|libdl|libpthread|librt|libutil|libresolv|ld-linux-x86-64)\.so'
torch_libs='site-packages/(torch|nvidia)/'
declare -A outside=()  # libraries to pack, by path
for f in "$bundle"/bin/* "$bundle"/lib/libdetkit_*.so*; do
  while read -r lib path _; do
    [[ $path == /* ]] || continue
    [[ $path =~ $system || $path =~ $torch_libs || $path == "$PWD/$build"/* ]] && continue
    outside[$path]=1
  done < <(ldd "$f" | awk '/=>/ {print $1, $3}')
done
for path in "${!outside[@]}"; do cp -L "$path" "$bundle/lib/"; done
strip --strip-unneeded "$bundle"/bin/* "$bundle"/lib/* 2>/dev/null || true

total=$(du -sb "$bundle" | cut -f1)
echo "gpu_bundle: $(ls "$bundle/lib" | wc -l) libraries, $((total / 1024 / 1024)) MiB (the device tool carries 64 MiB with the tree and shared/)"
echo "largest:"
for f in $(ls -S "$bundle/lib" | head -12); do
  printf '  %6d KiB  %s\n' $(( $(stat -c %s "$bundle/lib/$f") / 1024 )) "$f"
done
if (( total > limit )); then
  echo "gpu_bundle: over the device tool's 64 MiB: the largest come with OpenCV's imgcodecs" \
       "(GDAL and its formats); see docs/GPU.md" >&2
  exit 1
fi
