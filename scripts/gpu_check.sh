#!/usr/bin/env bash
# The GPU check of issue 49, in one call of the `device` tool: on a machine with an NVIDIA GPU,
# python3 with torch 2.11.0+cu130 and torchvision 0.26.0, from a fresh copy of the repository
# with gpu_bundle/ (made here by scripts/gpu_bundle.sh, carried): detkit.tar.xz (the binaries and
# the libraries they load beside torch) and shared.tar.xz (the Detectron2 fixtures that fit the
# device tool's 64 MiB), unpacked into /tmp. It builds nothing on the GPU machine (that machine
# has no Debian development packages): it runs the binaries built here against that python3's
# torch.
#
# Steps, each bounded by `timeout` (30 + 90 + 40 + 130 + 110 + 2 x 90 s, and about 10 s to
# unpack: the whole check fits the device tool's 10-minute call), each one's log in $OUT (or
# /tmp/gpu_check), the check going on after a failed step:
#   1 versions   `detkit --version`: torch, CUDA, cuDNN, NCCL, the GPU seen
#   2 cuda ops   test_ops's CudaKernels suite: ROIAlign (forward, backward, multi-level), NMS,
#                batched NMS, box IoU, mask pasting, deform_conv2d and autocast, CUDA against the
#                CPU kernels; and
#                test_distributed's NcclBackend suite: one rank over NCCL on loopback; test_solver's
#                SgdMultiTensor: SGD's update of CUDA parameters in one kernel against the CPU's;
#                test_utils's GpuStepClock: the GPU's idle share of a step
#   3 parity     test_modeling's Detectron2 parity suites with DETKIT_TEST_DEVICE=cuda: every
#                fixture shared.tar.xz carries, the model on the GPU, the CPU tolerances
#   4 demo AMP   200 iterations of the README's demo (configs/quick/mask_rcnn_R_18_FPN_shapes.yaml)
#                on cuda under fp16 autocast with a dynamic GradScaler, then its bbox/segm AP
#   5 benchmark  bench/compare_torchvision --device cuda: `detkit benchmark --task train` and
#                `--task eval` of Mask R-CNN R50-FPN (configs/Torchvision-Comparisons/, Detectron2's
#                R50-FPN Mask R-CNN with torchvision's settings) against torchvision 0.26's, at
#                1333x800 (shorter side 800, no scale augmentation, as Detectron2's noaug
#                benchmark), 2 images per GPU, fp32 and AMP, on shapes images of that size:
#                images/s over iterations 20-59 (a shorter window than Detectron2's 100-500, to
#                fit the call) and peak GPU memory
# It ends with one table: step, status (pass / FAIL / skipped, why) and the step's figures.
#
# Usage (device tool): scripts/gpu_check.sh   with carry ["gpu_bundle"], timeout_s 600
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
out=${OUT:-/tmp/gpu_check}
mkdir -p "$out"
bundle=/tmp/gpu_bundle
py=${PYTHON:-python3}
if [[ ! -f $repo/gpu_bundle/detkit.tar.xz ]]; then
  echo "gpu_check: gpu_bundle/detkit.tar.xz is missing: run scripts/gpu_bundle.sh here and carry gpu_bundle" >&2
  exit 2
fi
rm -rf "$bundle" && mkdir -p "$bundle" && xz -dc "$repo/gpu_bundle/detkit.tar.xz" | tar -C "$bundle" -xf -
if [[ -f $repo/gpu_bundle/shared.tar.xz ]]; then
  mkdir -p /tmp/gpu_shared && xz -dc "$repo/gpu_bundle/shared.tar.xz" | tar -C /tmp/gpu_shared -xf -
  export DETKIT_SHARED_DIR=${DETKIT_SHARED_DIR:-/tmp/gpu_shared}
fi
export DETKIT_SHARED_DIR=${DETKIT_SHARED_DIR:-$repo/shared}
export DETKIT_SOURCE_DIR=$repo

declare -a rows=()
row() { rows+=("$(printf '%-10s %-8s %s' "$1" "$2" "$3")"); }

# torch's libraries and the CUDA ones beside them (nvidia/*/lib) from the GPU machine's python3.
torch_lib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
nvidia_libs=$("$py" -c 'import glob, os, torch; base = os.path.dirname(os.path.dirname(torch.__file__)); print(":".join(sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib")) + glob.glob(os.path.join(base, "nvidia", "*", "*", "lib")))))')
export LD_LIBRARY_PATH=$bundle/lib:$torch_lib:$nvidia_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
detkit=$bundle/bin/detkit
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
echo "GPU: $(cat "$out/gpu.txt")"

# 1 versions
if timeout 30 "$detkit" --version > "$out/version.txt" 2>&1; then
  row versions pass "$(tail -1 "$out/version.txt")"
else
  row versions FAIL "$(tail -1 "$out/version.txt")"
fi

# 2 CUDA op tests
gtest_summary() {  # passed / failed / skipped counts of a gtest log
  local log=$1
  printf '%s passed, %s failed, %s skipped' \
    "$(grep -c '^\[       OK \]' "$log")" "$(grep -c '^\[  FAILED  \] [A-Za-z]' "$log" | awk '{print $1}')" \
    "$(grep -c '^\[  SKIPPED \] [A-Za-z].*(' "$log")"
}
if timeout 90 "$bundle/bin/test_ops" --gtest_filter='CudaKernels.*:CudaMath.*' > "$out/cuda_ops.txt" 2>&1; then
  row "cuda ops" pass "$(gtest_summary "$out/cuda_ops.txt")"
else
  row "cuda ops" FAIL "$(gtest_summary "$out/cuda_ops.txt")"
fi
grep '^\[ cuda \]' "$out/cuda_ops.txt" | head -20
if timeout 20 "$bundle/bin/test_distributed" --gtest_filter='NcclBackend.*' > "$out/nccl.txt" 2>&1 &&
   timeout 10 "$bundle/bin/test_solver" --gtest_filter='SgdMultiTensor.*' >> "$out/nccl.txt" 2>&1 &&
   timeout 10 "$bundle/bin/test_utils" --gtest_filter='GpuStepClock.*' >> "$out/nccl.txt" 2>&1; then
  row "nccl, sgd" pass "$(gtest_summary "$out/nccl.txt")"
else
  row "nccl, sgd" FAIL "$(gtest_summary "$out/nccl.txt")"
fi

# 3 parity fixtures on CUDA
if [[ -d $DETKIT_SHARED_DIR/fixtures ]]; then
  if DETKIT_TEST_DEVICE=cuda timeout 130 "$bundle/bin/test_modeling" \
      --gtest_filter='*Detectron2*:*Parity*:-*Torchvision*' > "$out/parity.txt" 2>&1; then
    row parity pass "$(gtest_summary "$out/parity.txt")"
  else
    row parity FAIL "$(gtest_summary "$out/parity.txt")"
  fi
else
  row parity skipped "no fixtures at $DETKIT_SHARED_DIR/fixtures"
fi

# 4 the demo, 200 iterations under fp16 AMP on cuda, then its AP
demo=$out/demo
if timeout 110 "$detkit" train --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml \
    MODEL.DEVICE cuda SOLVER.AMP.ENABLED True SOLVER.AMP.PRECISION float16 SOLVER.MAX_ITER 200 \
    OUTPUT_DIR "$demo" > "$out/demo.txt" 2>&1; then
  ap=$("$py" -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "bbox/AP" in l]
print("bbox AP %.1f, segm AP %.1f" % (rows[-1]["bbox/AP"], rows[-1].get("segm/AP", float("nan"))) if rows else "no AP in metrics.json")' "$demo/metrics.json" 2>&1)
  row "demo amp" pass "200 iterations fp16; $ap"
else
  row "demo amp" FAIL "$(grep -m1 'detkit: error' "$out/demo.txt" || tail -1 "$out/demo.txt")"
fi

# 5 the benchmark at 800x1333, 2 images per GPU, fp32 and AMP, against torchvision
if timeout 90 "$py" bench/compare_torchvision/compare_torchvision.py --detkit "$detkit" \
    --python "$py" --device cuda --image-size 1333x800 --models mask --tasks train,eval \
    --train 60:20:60 --eval 60:20:60 --rounds 1 --threads 16 --workers 4 \
    --work-dir "$out/bench" > "$out/bench_fp32.txt" 2>&1; then
  row "bench fp32" pass "$(grep -E '^(train|eval) +mask' "$out/bench_fp32.txt" | tr -s ' ' | tr '\n' ';')"
else
  row "bench fp32" FAIL "$(tail -1 "$out/bench_fp32.txt")"
fi
if timeout 90 "$py" bench/compare_torchvision/compare_torchvision.py --detkit "$detkit" \
    --python "$py" --device cuda --image-size 1333x800 --models mask --tasks train,eval \
    --train 60:20:60 --eval 60:20:60 --rounds 1 --threads 16 --workers 4 --amp \
    --work-dir "$out/bench_amp" > "$out/bench_amp.txt" 2>&1; then
  row "bench amp" pass "$(grep -E '^(train|eval) +mask' "$out/bench_amp.txt" | tr -s ' ' | tr '\n' ';')"
else
  row "bench amp" FAIL "$(tail -1 "$out/bench_amp.txt")"
fi

echo
echo "== gpu_check: $(cat "$out/gpu.txt") =="
printf '%-10s %-8s %s\n' step status figures
printf '%s\n' "${rows[@]}"
