#!/usr/bin/env bash
# Issue 19's from-scratch run: Mask R-CNN R50-FPN with trainable BatchNorm, Detectron2's
# mask_rcnn_R_50_FPN_1x.yaml schedule (BASE_LR 0.01 with the 1000-iteration warm-up), 100
# iterations of `detkit benchmark --task train` on a 200-image 512x384 shapes dataset registered
# as coco_2017_train, once per seed. Prints one JSON object per seed (lr and total loss per
# iteration); a diverged run prints detkit's error instead.
#
#   bench/warmup_from_scratch/run_seeds.sh DETKIT_BINARY DATASETS_ROOT OUT_DIR [SEED...]
# DATASETS_ROOT/coco/{annotations/instances_train2017.json,train2017} must exist, e.g. made by
#   detkit make-shapes --out S --train 200 --val 50 --size 512x384 and symlinked there.
set -euo pipefail
detkit=$1 datasets=$2 out=$3
shift 3
seeds=("${@:-1 2 3}")
here="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
for seed in ${seeds[@]}; do
  DETKIT_DATASETS="$datasets" "$detkit" --num-threads 2 benchmark \
    --config-file "$here/configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml" \
    --task train --iters 100 --window 10:100 --json \
    MODEL.WEIGHTS '' MODEL.ROI_HEADS.NUM_CLASSES 3 MODEL.RESNETS.STRIDE_IN_1X1 False \
    MODEL.RESNETS.NORM BN MODEL.BACKBONE.FREEZE_AT 0 MODEL.PIXEL_STD '(57.375, 57.120, 58.395)' \
    MODEL.ROI_BOX_HEAD.POOLER_TYPE ROIAlign MODEL.ROI_BOX_HEAD.POOLER_SAMPLING_RATIO 2 \
    MODEL.ROI_MASK_HEAD.POOLER_TYPE ROIAlign MODEL.ROI_MASK_HEAD.POOLER_SAMPLING_RATIO 2 \
    MODEL.ROI_HEADS.SCORE_THRESH_TEST 0.0 SOLVER.MAX_ITER 90000 SOLVER.WARMUP_ITERS 1000 \
    MODEL.RPN.POST_NMS_TOPK_TRAIN 2000 INPUT.MIN_SIZE_TRAIN '(384,)' INPUT.MAX_SIZE_TRAIN 512 \
    INPUT.MIN_SIZE_TEST 384 INPUT.MAX_SIZE_TEST 512 INPUT.RANDOM_FLIP none SOLVER.IMS_PER_BATCH 2 \
    SOLVER.BASE_LR 0.01 DATALOADER.NUM_WORKERS 1 SEED "$seed" OUTPUT_DIR "$out/seed$seed" \
    > "$out/seed$seed.json" 2> "$out/seed$seed.log" || echo "seed $seed: $(tail -1 "$out/seed$seed.log")"
  echo "seed $seed done: $(wc -c < "$out/seed$seed.json") bytes of JSON"
done
