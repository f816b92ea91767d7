#!/usr/bin/env python3
"""check_voc_train.py DETKIT SOURCE_DIR OUT_DIR VOC_FIXTURE COCO_TINY_VAL: Detectron2's
configs/PascalVOC-Detection/faster_rcnn_R_50_FPN.yaml through the CLI on a small VOC folder:

1. OUT_DIR/VOC2007 gets the fixture's Annotations/ and a split `mini` of 8 images with objects,
   JPEGImages/<stem>.jpg linked to coco_tiny's val2017 image named in each XML's <filename>;
   DETKIT_DATASETS_REGISTER registers it as voc_mini (name=voc:<dir>:mini:2007);
2. the zoo file trains two steps at 64 px (no ImageNet weights) on voc_mini and evaluates it with
   PascalVOCDetectionEvaluator: Detectron2's "using 2007 metric" line in the log, bbox/AP, AP50,
   AP75 in metrics.json, the per-class results under inference/pascal_voc_results/ (detections
   kept at any score);
3. `detkit evaluate --voc-dir` on those files gives the numbers metrics.json holds (the
   evaluator's numbers are proven against Detectron2's in tests/evaluation)."""
import json
import os
import re
import subprocess
import sys

detkit, source, out, fixture, images = sys.argv[1:6]
voc = f"{out}/VOC2007"
os.makedirs(f"{voc}/ImageSets/Main", exist_ok=True)
os.makedirs(f"{voc}/JPEGImages", exist_ok=True)
if not os.path.exists(f"{voc}/Annotations"):
    os.symlink(f"{fixture}/VOC2007/Annotations", f"{voc}/Annotations")
stems = []
for stem in open(f"{fixture}/VOC2007/ImageSets/Main/test.txt").read().split():
    xml = open(f"{fixture}/VOC2007/Annotations/{stem}.xml").read()
    if "<object>" not in xml:
        continue
    link = f"{voc}/JPEGImages/{stem}.jpg"
    if not os.path.lexists(link):
        os.symlink(f"{images}/{re.search(r'<filename>(.*?)</filename>', xml).group(1)}", link)
    stems.append(stem)
    if len(stems) == 8:
        break
open(f"{voc}/ImageSets/Main/mini.txt", "w").write("\n".join(stems) + "\n")

output_dir = f"{out}/train"
env = dict(os.environ, DETKIT_DATASETS_REGISTER=f"voc_mini=voc:{voc}:mini:2007")
run = subprocess.run([detkit, "train", "--config-file",
                      f"{source}/configs/PascalVOC-Detection/faster_rcnn_R_50_FPN.yaml",
                      "MODEL.WEIGHTS", "", "DATASETS.TRAIN", "('voc_mini',)",
                      "DATASETS.TEST", "('voc_mini',)", "SOLVER.MAX_ITER", "2",
                      "SOLVER.STEPS", "()", "SOLVER.IMS_PER_BATCH", "2",
                      "INPUT.MIN_SIZE_TRAIN", "(64,)", "INPUT.MAX_SIZE_TRAIN", "96",
                      "INPUT.MIN_SIZE_TEST", "64", "INPUT.MAX_SIZE_TEST", "96",
                      "DATALOADER.NUM_WORKERS", "1", "MODEL.DEVICE", "cpu",
                      # without ImageNet weights the losses are in the thousands: a small step
                      # keeps the model finite, and every detection is kept
                      "SOLVER.BASE_LR", "1e-6", "MODEL.ROI_HEADS.SCORE_THRESH_TEST", "0.0",
                      "OUTPUT_DIR", output_dir], capture_output=True, text=True, env=env)
log = run.stdout + run.stderr
if run.returncode != 0:
    sys.exit(f"detkit train failed ({run.returncode}):\n{log[-4000:]}")
failures = []
if "Evaluating voc_mini using 2007 metric" not in log:
    failures.append("no 'Evaluating voc_mini using 2007 metric' in the log")
metrics = {}
for line in open(f"{output_dir}/metrics.json"):
    if line.strip():
        metrics.update(json.loads(line))
results = f"{output_dir}/inference/pascal_voc_results"
files = sorted(os.listdir(results)) if os.path.isdir(results) else []
if len(files) != 20:
    failures.append(f"{results}: {len(files)} class files, expected 20")
else:
    lines = sum(len(open(f"{results}/{f}").read().splitlines()) for f in files)
    print(f"{lines} detection lines in {results}")
    if lines == 0:
        failures.append(f"{results}: no detection lines")
    cli = subprocess.run([detkit, "evaluate", "--voc-dir", voc, "--split", "mini", "--results",
                          results, "--json"], capture_output=True, text=True)
    if cli.returncode != 0:
        failures.append(f"detkit evaluate failed: {cli.stderr}")
    else:
        got = json.loads(cli.stdout)["bbox"]
        print(f"detkit evaluate: {got}")
        for key in ("AP", "AP50", "AP75"):
            if f"bbox/{key}" not in metrics:
                failures.append(f"metrics.json has no bbox/{key}")
            elif abs(metrics[f"bbox/{key}"] - got[key]) > 1e-9:
                failures.append(f"bbox/{key}: metrics.json {metrics[f'bbox/{key}']}, "
                                f"detkit evaluate {got[key]}")
if failures:
    sys.exit("\n".join(failures) + "\n" + log[-3000:])
print("metrics.json:", {k: v for k, v in metrics.items() if k.startswith("bbox/")})
