#!/bin/bash
# A/B: OpenBLAS's own choice (forced with OPENBLAS_CORETYPE=Prescott, what it picks here) vs detkit's restart with SkylakeX
cd "$(dirname "$0")/../.."
# the shapes dataset bench/distributed_scaling makes (512x384, 64 train, 16 val)
export DETKIT_DATASETS=${DETKIT_DATASETS:-/tmp/dscale}
C=configs/Torchvision-Comparisons/mask_rcnn_R_50_FPN_torchvision.yaml
for round in 1 2; do
  for mode in generic detkit; do
    if [ $mode = generic ]; then E="env OPENBLAS_CORETYPE=Prescott"; else E="env"; fi
    $E ./build/tools/detkit --num-threads 2 benchmark --config-file $C --task train --iters 8 --window 3:8 --json DATALOADER.NUM_WORKERS 1 2>/dev/null | tail -1 | /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print('round $round $mode train: images/s %.3f s/iter %.3f gemm_peak %.1f GFLOPS' % (j['images_per_second'], j['seconds_per_iter'], j['gemm_peak_gflops']))"
    $E ./build/tools/detkit --num-threads 2 benchmark --config-file $C --task eval --iters 20 --window 5:20 --json DATALOADER.NUM_WORKERS 1 2>/dev/null | tail -1 | /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print('round $round $mode eval: images/s %.3f' % (j['images_per_second']))"
  done
done
