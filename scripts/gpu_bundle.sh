#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh needs on a GPU machine into gpu_bundle/ (ignored by git), for
# the `device` tool to carry. The GPU machines have python3 with torch 2.11.0+cu130 (the torch
# detkit builds on here), nvcc, cmake and ninja, but none of Debian's development packages and no
# network, so the check runs binaries built here (./scripts/setup.sh first) against that torch:
#   gpu_bundle/detkit.tar.xz   bin/: detkit and the test binaries the check runs (test_ops,
#                              test_modeling, test_distributed, test_solver, test_utils); lib/: detkit's libraries and every shared library
#                              they load that is neither torch's (torch/lib, nvidia/*) nor the C
#                              library's (yaml-cpp, fmt, spdlog, OpenCV core and imgproc, libpng,
#                              TurboJPEG, libstdc++, ...), stripped of debug symbols
#   gpu_bundle/shared.tar.xz   the Detectron2 fixtures the parity step runs (fixtures/<name>/) and
#                              coco_tiny's val annotations, from ../shared (or $DETKIT_SHARED_DIR):
#                              as many fixtures as fit, in the order of $fixtures below
# The device tool carries at most 64 MiB in all: the working tree's tracked files and gpu_bundle/.
# The script prints each part's size and the fixtures left out, and exits 1 when the libraries
# alone do not fit.
#
# Usage: scripts/gpu_bundle.sh [BUILD_DIR]   (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bundle=gpu_bundle
limit=$((64 * 1024 * 1024))
shared=${DETKIT_SHARED_DIR:-../shared}
# Detectron2 fixtures in the order they are packed, while they fit: the Mask R-CNN first.
fixtures=(detectron2 detectron2_retinanet detectron2_c4 detectron2_rpn detectron2_panoptic
          detectron2_dc5 detectron2_keypoint detectron2_cascade detectron2_bn_train)
stage=$build/gpu_bundle_stage

binaries=("$build/tools/detkit" "$build/tests/ops/test_ops" "$build/tests/modeling/test_modeling"
          "$build/tests/distributed/test_distributed" "$build/tests/solver/test_solver"
          "$build/tests/utils/test_utils")
for b in "${binaries[@]}"; do
  [[ -x $b ]] || { echo "gpu_bundle: $b is missing: build first (./scripts/setup.sh)" >&2; exit 1; }
done

rm -rf "$bundle" "$stage"
mkdir -p "$bundle" "$stage/bin" "$stage/lib"
cp "${binaries[@]}" "$stage/bin/"
find "$build" -name 'libdetkit_*.so*' -not -path '*/CMakeFiles/*' -exec cp -P {} "$stage/lib/" \;

# The C library and its loader come from the GPU machine; torch and CUDA from its python3.
system='/(libc|libm|libdl|libpthread|librt|libutil|libresolv|ld-linux-x86-64)\.so'
torch_libs='site-packages/(torch|nvidia)/'
declare -A outside=()  # libraries to pack, by path
for f in "$stage"/bin/* "$stage"/lib/libdetkit_*.so*; do
  while read -r lib path _; do
    [[ $path == /* ]] || continue
    [[ $path =~ $system || $path =~ $torch_libs || $path == "$PWD/$build"/* ]] && continue
    outside[$path]=1
  done < <(ldd "$f" | awk '/=>/ {print $1, $3}')
done
for path in "${!outside[@]}"; do cp -L "$path" "$stage/lib/"; done
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/* 2>/dev/null || true

mib() { echo "$(( ($1 + 1048575) / 1048576 ))"; }
size() { stat -c %s "$1"; }
tar -C "$stage" -cf - bin lib | xz -T0 -6 > "$bundle/detkit.tar.xz"
tree=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s}')
used=$((tree + $(size "$bundle/detkit.tar.xz")))
echo "gpu_bundle: $(ls "$stage/lib" | wc -l) libraries, $(mib "$(du -sb "$stage" | cut -f1)") MiB," \
     "$(mib "$(size "$bundle/detkit.tar.xz")") MiB packed; the tracked tree $(mib "$tree") MiB"
echo "largest libraries:"
for f in $(ls -S "$stage/lib" | head -8); do
  printf '  %6d KiB  %s\n' $(( $(stat -c %s "$stage/lib/$f") / 1024 )) "$f"
done
if (( used > limit )); then
  echo "gpu_bundle: the libraries and the tree alone are over the device tool's 64 MiB" >&2
  exit 1
fi

# The fixtures, each packed alone to learn its size, then the ones that fit packed together.
if [[ -d $shared/fixtures ]]; then
  packed=(data/coco_tiny/annotations/instances_val2017.json)
  used=$((used + $(xz -T0 -6 -c "$shared/${packed[0]}" | wc -c)))
  left_out=()
  for name in "${fixtures[@]}"; do
    [[ -d $shared/fixtures/$name ]] || continue
    bytes=$(tar -C "$shared" -cf - "fixtures/$name" | xz -T0 -6 | wc -c)
    if (( used + bytes + 65536 <= limit )); then
      packed+=("fixtures/$name")
      used=$((used + bytes))
    else
      left_out+=("$name ($(mib "$bytes") MiB)")
    fi
  done
  tar -C "$shared" -cf - "${packed[@]}" | xz -T0 -6 > "$bundle/shared.tar.xz"
  echo "gpu_bundle: shared.tar.xz $(mib "$(size "$bundle/shared.tar.xz")") MiB: ${packed[*]}"
  (( ${#left_out[@]} )) && echo "gpu_bundle: fixtures left out (over 64 MiB): ${left_out[*]}"
else
  echo "gpu_bundle: no fixtures at $shared/fixtures: the parity step will be skipped"
fi
rm -rf "$stage"
echo "gpu_bundle: $(mib "$(( tree + $(du -sb "$bundle" | cut -f1) ))") MiB with the tree (of 64)"
