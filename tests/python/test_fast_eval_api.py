"""detkit.evaluation.fast_eval_api.COCOeval_opt against pycocotools' COCOeval (the oracle): the
precision, recall and scores arrays of both on coco_tiny's ground truth with the reference
evaluator fixtures' detections (bbox, segm; keypoints on their synthetic file), under changed
parameters (useCats 0, fewer IoU thresholds, one maxDet, one area range), and the errors.
Usage: test_fast_eval_api.py SHARED SOURCE DETKIT."""
import contextlib
import copy
import io
import json
import os
import sys

import numpy as np

from checks import check, finish, raises

try:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
except ImportError:
    print("SKIP: pycocotools is not installed (requirements.txt has it)")
    sys.exit(77)

import detkit
from detkit.evaluation.fast_eval_api import COCOeval_opt

shared = sys.argv[1]
fixtures = os.path.join(shared, "fixtures")
if not os.path.isdir(os.path.join(fixtures, "cocoeval")):
    print(f"SKIP: {fixtures}/cocoeval (the reference evaluator's fixtures) is absent")
    sys.exit(77)


def quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def run(evaluator_class, gt, results, iou_type, params):
    dt = quiet(gt.loadRes, copy.deepcopy(results))
    e = evaluator_class(gt, dt, iou_type)
    for name, value in params.items():
        setattr(e.params, name, value)
    quiet(e.evaluate)
    quiet(e.accumulate)
    return e


def compare(gt, results, iou_type, params, label):
    ref = run(COCOeval, gt, results, iou_type, params)
    opt = run(COCOeval_opt, gt, results, iou_type, params)
    check(ref.eval["counts"] == opt.eval["counts"], f"{label}: counts {opt.eval['counts']}")
    worst = 0.0
    for key in ("precision", "recall", "scores"):
        a, b = np.asarray(ref.eval[key]), np.asarray(opt.eval[key])
        if a.shape != b.shape:
            check(False, f"{label}: {key} shape {b.shape}, pycocotools {a.shape}")
            return
        if a.size:
            worst = max(worst, float(np.abs(a - b).max()))
    check(worst <= 1e-12, f"{label}: precision / recall / scores max diff {worst:.3g}")
    if set(params) - {"useCats"}:
        return  # pycocotools' summarize() reads the default thresholds, maxDets and areas
    quiet(ref.summarize)
    quiet(opt.summarize)
    check(np.allclose(ref.stats, opt.stats, atol=1e-12, rtol=0),
          f"{label}: summarize() stats equal (AP {opt.stats[0]:.4f})")


gt_file = os.path.join(shared, "data", "coco_tiny", "annotations", "instances_val2017.json")
gt = quiet(COCO, gt_file)
variations = {
    "default": {},
    "useCats 0": {"useCats": 0},
    "IoU 0.5 and 0.75": {"iouThrs": np.array([0.5, 0.75])},
    "maxDets [1]": {"maxDets": [1]},
    "one area range": {"areaRng": [[0, 1e5**2]], "areaRngLbl": ["all"]},
}
for iou_type in ("bbox", "segm"):
    for level in ("easy", "hard"):
        with open(os.path.join(fixtures, "cocoeval", f"{iou_type}_{level}_s1_results.json")) as f:
            results = json.load(f)
        for name, params in variations.items():
            if iou_type == "segm" and level == "easy" and name != "default":
                continue  # the masks are slow in pycocotools; bbox covers the parameters
            compare(gt, results, iou_type, params, f"{iou_type} {level} {name}")

kp_dir = os.path.join(fixtures, "cocoeval_keypoints")
kp_gt = quiet(COCO, os.path.join(kp_dir, "person_keypoints_val2017_synth.json"))
with open(os.path.join(kp_dir, "keypoints_hard_s1_results.json")) as f:
    kp_results = json.load(f)
compare(kp_gt, kp_results, "keypoints", {}, "keypoints hard default")
compare(kp_gt, kp_results, "keypoints", {"maxDets": [5]}, "keypoints hard maxDets [5]")

# Errors: what pycocotools raises, or detkit's naming what is wrong.
with open(os.path.join(fixtures, "cocoeval", "bbox_hard_s1_results.json")) as f:
    bbox_results = json.load(f)
fresh = COCOeval_opt(gt, quiet(gt.loadRes, copy.deepcopy(bbox_results)), "bbox")
raises(RuntimeError, fresh.accumulate, "evaluate() must be called before accumulate()")
no_score = [{k: v for k, v in r.items() if k != "score"} for r in bbox_results]
for cls in (COCOeval, COCOeval_opt):
    try:
        run(cls, gt, no_score, "bbox", {})
        check(False, f"{cls.__name__}: detections without score raise")
    except KeyError as e:
        check(str(e) == "'score'", f"{cls.__name__}: detections without score: KeyError {e}")
bad = COCOeval_opt(gt, quiet(gt.loadRes, copy.deepcopy(bbox_results)), "bbox")
bad.computeIoU = lambda image_id, cat_id: np.zeros((1, 1))  # a matrix of the wrong size
try:
    quiet(bad.evaluate)
    check(False, "IoUs of the wrong size raise")
except detkit.Error as e:
    check("detections x" in str(e) and "image" in str(e), f"IoUs of the wrong size: {e}")
finish()
