#!/usr/bin/env python3
"""check_panoptic_train.py DETKIT SOURCE_DIR OUT_DIR PANOPTIC_JSON PANOPTIC_PNGS: Detectron2's
panoptic and semantic user path through the CLI, on coco_tiny_panoptic_{separated,stuffonly}
(DETKIT_DATASETS_REGISTER's panoptic_separated form, the ground truth PANOPTIC_JSON + PNGS):

1. configs/quick/panoptic_fpn_R_18_FPN_coco_tiny.yaml trains two steps (loss_sem_seg among its
   losses) and evaluates with SemSegEvaluator, COCOEvaluator and COCOPanopticEvaluator: their
   tables in the log, sem_seg/mIoU, bbox/AP, segm/AP and panoptic_seg/PQ in metrics.json;
2. `detkit evaluate --iou-type panoptic` on the predictions.json and PNGs that evaluation wrote
   (one per image) gives the PQ metrics.json holds (near 0 after two steps: the evaluators'
   numbers are proven against Detectron2's and panopticapi's in tests/evaluation);
3. Detectron2's configs/Misc/semantic_R_50_FPN_1x.yaml (SemanticSegmentor, no ImageNet weights, 4
   classes) trains two steps on coco_tiny_panoptic_stuffonly and reports sem_seg/mIoU alone."""
import json
import subprocess
import sys

detkit, source, out, panoptic_json, panoptic_pngs = sys.argv[1:6]
small = ["SOLVER.MAX_ITER", "2", "SOLVER.IMS_PER_BATCH", "2", "INPUT.MIN_SIZE_TRAIN", "(96,)",
         "INPUT.MAX_SIZE_TRAIN", "128", "INPUT.MIN_SIZE_TEST", "96", "INPUT.MAX_SIZE_TEST", "128",
         "DATALOADER.NUM_WORKERS", "1", "MODEL.DEVICE", "cpu"]


def train(config, output_dir, *overrides):
    run = subprocess.run([detkit, "train", "--config-file", f"{source}/configs/{config}", *small,
                          *overrides, "OUTPUT_DIR", output_dir], capture_output=True, text=True)
    log = run.stdout + run.stderr
    if run.returncode != 0:
        sys.exit(f"detkit train {config} failed ({run.returncode}):\n{log[-4000:]}")
    lines = [json.loads(l) for l in open(f"{output_dir}/metrics.json") if l.strip()]
    merged = {}
    for line in lines:
        merged.update(line)
    return log, merged


failures = []
panoptic_dir = f"{out}/panoptic"
log, metrics = train("quick/panoptic_fpn_R_18_FPN_coco_tiny.yaml", panoptic_dir)
for text in ("Panoptic Evaluation Results", "mIoU", "Evaluation results for bbox"):
    if text not in log:
        failures.append(f"PanopticFPN's log lacks '{text}'")
for key in ("loss_sem_seg", "loss_mask", "sem_seg/mIoU", "sem_seg/fwIoU", "bbox/AP", "segm/AP",
            "panoptic_seg/PQ", "panoptic_seg/PQ_th", "panoptic_seg/PQ_st"):
    if key not in metrics:
        failures.append(f"PanopticFPN's metrics.json lacks {key}")
print(f"[ panoptic ] 2 steps: loss_sem_seg {metrics.get('loss_sem_seg')}; sem_seg/mIoU "
      f"{metrics.get('sem_seg/mIoU')}, bbox/AP {metrics.get('bbox/AP')}, panoptic_seg/PQ "
      f"{metrics.get('panoptic_seg/PQ')} (PQ_st {metrics.get('panoptic_seg/PQ_st')})")

inference = f"{panoptic_dir}/inference"
evaluated = json.loads(subprocess.run(
    [detkit, "evaluate", "--iou-type", "panoptic",
     "--gt", panoptic_json, "--gt-dir", panoptic_pngs, "--results", f"{inference}/predictions.json",
     "--results-dir", f"{inference}/predictions", "--json"],
    check=True, capture_output=True, text=True).stdout)
# Two steps from scratch make a PQ near 0, so beyond the equality the predictions must be whole:
# one per image, the categories scored those of the ground truth with segments in either.
predictions = json.load(open(f"{inference}/predictions.json"))["annotations"]
if len(predictions) != 80 or evaluated["All"]["n"] < 80:
    failures.append(f"predictions.json has {len(predictions)} images, PQ counted "
                    f"{evaluated['All']['n']} categories")
pq = 100 * evaluated["All"]["pq"]
print(f"[ panoptic ] detkit evaluate on the written predictions: PQ {pq} (training's "
      f"{metrics.get('panoptic_seg/PQ')})")
if "panoptic_seg/PQ" in metrics and abs(pq - metrics["panoptic_seg/PQ"]) > 1e-9 * max(1, pq):
    failures.append("detkit evaluate's PQ is not the training evaluation's")

log, metrics = train("Misc/semantic_R_50_FPN_1x.yaml", f"{out}/semantic", "MODEL.WEIGHTS", "''",
                     "MODEL.SEM_SEG_HEAD.NUM_CLASSES", "4", "DATASETS.TRAIN",
                     "('coco_tiny_panoptic_stuffonly',)", "DATASETS.TEST",
                     "('coco_tiny_panoptic_stuffonly',)")
evaluated_tasks = sorted({k.split("/")[0] for k in metrics if "/" in k and k.split("/")[0] in
                          ("sem_seg", "bbox", "segm", "panoptic_seg")})
print(f"[ semantic ] 2 steps: loss_sem_seg {metrics.get('loss_sem_seg')}; evaluated "
      f"{evaluated_tasks}: sem_seg/mIoU {metrics.get('sem_seg/mIoU')}")
if evaluated_tasks != ["sem_seg"] or "loss_sem_seg" not in metrics:
    failures.append(f"SemanticSegmentor: evaluated {evaluated_tasks}")
if failures:
    sys.exit("; ".join(failures))
print("Panoptic FPN and SemanticSegmentor train and evaluate from the CLI: all checks passed")
