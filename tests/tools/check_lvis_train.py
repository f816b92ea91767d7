#!/usr/bin/env python3
"""check_lvis_train.py DETKIT SOURCE_DIR OUT_DIR LVIS_FIXTURE COCO_TINY: Detectron2's
configs/LVISv1-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml through the CLI on an LVIS file,
with the federated loss on (USE_SIGMOID_CE, USE_FED_LOSS: its class weights from the file's
categories' image_count):

1. DETKIT_DATASETS_REGISTER registers the tiny LVIS v1 file (coco_tiny's 80 images, 80 LVIS
   categories) as lvis_tiny and its first 16 images as lvis_tiny16 (name=lvis:<json>:<root>);
2. the zoo file trains two steps at 64 px (SEED 1, no ImageNet weights; RepeatFactorTrainingSampler
   from the file) on lvis_tiny and evaluates lvis_tiny16 with the LVIS evaluator: Detectron2's LVIS
   table in the log (APr, APc, APf), bbox/ and segm/ AP, APr, APc, APf in metrics.json, the
   detections in inference/lvis_instances_results.json;
3. `detkit evaluate --gt` the 16 images' file with those detections gives the numbers metrics.json
   holds (the evaluator's numbers are proven against lvis-api's in tests/evaluation). For segm the
   detections go without their boxes, as Detectron2's LVISEvaluator hands them to lvis-api: with a
   box, LVISResults takes the box's area as the detection's (an empty mask then stays in play)."""
import json
import math
import os
import subprocess
import sys

detkit, source, out, fixture, coco_tiny = sys.argv[1:6]
train_gt = f"{fixture}/lvis_v1_val_tiny.json"
os.makedirs(out, exist_ok=True)
tiny = json.load(open(train_gt))
tiny["images"] = tiny["images"][:16]
kept = {image["id"] for image in tiny["images"]}
tiny["annotations"] = [a for a in tiny["annotations"] if a["image_id"] in kept]
gt = f"{out}/lvis_tiny16.json"  # the categories' counts stay the whole file's
json.dump(tiny, open(gt, "w"))
output_dir = f"{out}/train"
env = dict(os.environ, DETKIT_NUM_THREADS="1", DETKIT_DATASETS_REGISTER=(
    f"lvis_tiny=lvis:{train_gt}:{coco_tiny}/;lvis_tiny16=lvis:{gt}:{coco_tiny}/"))
run = subprocess.run([detkit, "train", "--config-file",
                      f"{source}/configs/LVISv1-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml",
                      "MODEL.WEIGHTS", "", "SEED", "1", "DATASETS.TRAIN", "('lvis_tiny',)",
                      "DATASETS.TEST", "('lvis_tiny16',)", "MODEL.ROI_HEADS.NUM_CLASSES", "80",
                      "MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE", "True",
                      "MODEL.ROI_BOX_HEAD.USE_FED_LOSS", "True",
                      "SOLVER.MAX_ITER", "2", "SOLVER.STEPS", "()", "SOLVER.IMS_PER_BATCH", "2",
                      "INPUT.MIN_SIZE_TRAIN", "(64,)", "INPUT.MAX_SIZE_TRAIN", "96",
                      "INPUT.MIN_SIZE_TEST", "64", "INPUT.MAX_SIZE_TEST", "96",
                      "DATALOADER.NUM_WORKERS", "1", "MODEL.DEVICE", "cpu",
                      # untrained, the file's LR diverges: a small step keeps the model finite
                      "SOLVER.BASE_LR", "1e-6", "OUTPUT_DIR", output_dir],
                     capture_output=True, text=True, env=env)
log = run.stdout + run.stderr
if run.returncode != 0:
    sys.exit(f"detkit train failed ({run.returncode}):\n{log[-4000:]}")
failures = []
for needed in ("APr", "APc", "APf"):
    if needed not in log:
        failures.append(f"no {needed} column in the log's LVIS table")
metrics = {}
for line in open(f"{output_dir}/metrics.json"):
    if line.strip():
        metrics.update(json.loads(line))
if not any(k.startswith("fast_rcnn/") or k == "loss_cls" for k in metrics):
    failures.append("metrics.json has no loss_cls")
results = f"{output_dir}/inference/lvis_instances_results.json"
if not os.path.exists(results):
    failures.append(f"{results} is missing")
else:
    detections = json.load(open(results))
    print(f"{len(detections)} detections in {results}")
    without_boxes = f"{out}/lvis_segm_results.json"
    json.dump([{k: v for k, v in d.items() if k != "bbox"} for d in detections],
              open(without_boxes, "w"))
    for task, scored in (("bbox", results), ("segm", without_boxes)):
        cli = subprocess.run([detkit, "evaluate", "--gt", gt, "--results", scored, "--iou-type",
                              task, "--json"], capture_output=True, text=True)
        if cli.returncode != 0:
            failures.append(f"detkit evaluate --iou-type {task} failed: {cli.stderr[-2000:]}")
            continue
        got = json.loads(cli.stdout)["results"]
        print(f"detkit evaluate --iou-type {task}: AP {got['AP']}, APr {got['APr']}, "
              f"APc {got['APc']}, APf {got['APf']}")
        for key in ("AP", "AP50", "AP75", "APr", "APc", "APf"):
            name = f"{task}/{key}"
            if name not in metrics:
                failures.append(f"metrics.json has no {name}")
                continue
            expected = 100 * got[key] if got[key] >= 0 else -100.0
            both_nan = math.isnan(metrics[name]) and math.isnan(expected)
            if not both_nan and abs(metrics[name] - expected) > 1e-9:
                failures.append(f"{name}: metrics.json {metrics[name]}, detkit evaluate x 100 "
                                f"{expected}")
if failures:
    sys.exit("\n".join(failures) + "\n" + log[-3000:])
print("metrics.json:", {k: v for k, v in metrics.items() if k.startswith(("bbox/", "segm/"))})
