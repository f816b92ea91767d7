#!/usr/bin/env python3
"""check_shapes_panoptic_train.py DETKIT SOURCE_DIR OUT_DIR DATASETS_ROOT: the panoptic shapes demo
through the CLI. configs/quick/panoptic_fpn_R_18_FPN_shapes.yaml trains two steps at a tiny size
under DETKIT_DATASETS=DATASETS_ROOT, where its built-in names make the shapes-on-stuff dataset on
first use (shapes_panoptic/: instances, panoptic JSON and PNGs, separated semantic labels), then
evaluates shapes_val_panoptic_separated (10 detections per image, to keep it short) with SemSeg, COCO and COCO panoptic evaluators:
loss_sem_seg among the losses, and sem_seg/mIoU, bbox/AP, segm/AP and panoptic_seg/PQ (with
PQ_th, PQ_st) in metrics.json, PQ counted over the 6 categories."""
import json
import os
import subprocess
import sys

detkit, source, out, datasets = sys.argv[1:5]
env = dict(os.environ, DETKIT_DATASETS=datasets)
run = subprocess.run(
    [detkit, "train", "--config-file", f"{source}/configs/quick/panoptic_fpn_R_18_FPN_shapes.yaml",
     "SOLVER.MAX_ITER", "2", "SOLVER.IMS_PER_BATCH", "2", "INPUT.MIN_SIZE_TRAIN", "(64,)",
     "INPUT.MAX_SIZE_TRAIN", "96", "INPUT.MIN_SIZE_TEST", "64", "INPUT.MAX_SIZE_TEST", "96",
     "DATALOADER.NUM_WORKERS", "1", "MODEL.RPN.POST_NMS_TOPK_TEST", "50",
     "TEST.DETECTIONS_PER_IMAGE", "10", "OUTPUT_DIR", out], capture_output=True, text=True, env=env)
log = run.stdout + run.stderr
if run.returncode != 0:
    sys.exit(f"detkit train failed ({run.returncode}):\n{log[-4000:]}")

failures = []
root = f"{datasets}/shapes_panoptic"
for path in ("annotations/instances_train.json", "annotations/panoptic_val.json",
             "panoptic_val/000050.png", "panoptic_stuff_train/000200.png", "val/000050.jpg"):
    if not os.path.isfile(f"{root}/{path}"):
        failures.append(f"the dataset made on first use lacks {path}")
for text in ("Panoptic Evaluation Results", "mIoU", "Evaluation results for bbox"):
    if text not in log:
        failures.append(f"the log lacks '{text}'")
merged = {}
for line in open(f"{out}/metrics.json"):
    if line.strip():
        merged.update(json.loads(line))
for key in ("loss_sem_seg", "loss_mask", "sem_seg/mIoU", "bbox/AP", "segm/AP", "panoptic_seg/PQ",
            "panoptic_seg/PQ_th", "panoptic_seg/PQ_st", "panoptic_seg/SQ", "panoptic_seg/RQ"):
    if key not in merged:
        failures.append(f"metrics.json lacks {key}")
predictions = json.load(open(f"{out}/inference/predictions.json"))["annotations"]
if len(predictions) != 50:
    failures.append(f"predictions.json has {len(predictions)} images, not the 50 of val")
print(f"2 steps: loss_sem_seg {merged.get('loss_sem_seg')}; sem_seg/mIoU "
      f"{merged.get('sem_seg/mIoU')}, bbox/AP {merged.get('bbox/AP')}, panoptic_seg/PQ "
      f"{merged.get('panoptic_seg/PQ')} (PQ_th {merged.get('panoptic_seg/PQ_th')}, PQ_st "
      f"{merged.get('panoptic_seg/PQ_st')})")
if failures:
    sys.exit("; ".join(failures))
