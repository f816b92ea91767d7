#!/usr/bin/env python3
"""check_evaluate.py DETKIT GT RESULTS IOU_TYPE EXPECTED: runs `detkit evaluate --json` and
compares its stats and per-category AP with pycocotools' numbers in EXPECTED (to 1e-9).

check_evaluate.py DETKIT panoptic|sem_seg FIXTURE_DIR PREDICTIONS: the same for panopticapi's
pq_compute (shared/fixtures/panoptic_pq, PREDICTIONS a case's JSON) or Detectron2's
SemSegEvaluator (shared/fixtures/semseg_eval, PREDICTIONS a case's PNG folder)."""
import json
import math
import subprocess
import sys


def run(detkit, *args):
    return json.loads(subprocess.run([detkit, "evaluate", *args, "--json"], check=True,
                                     capture_output=True, text=True).stdout)


def check_panoptic(detkit, fixtures, predictions):
    expected = json.load(open(f"{fixtures}/expected_s1.json"))
    case = next(c for c in expected["cases"] if c["predictions"] == predictions)
    got = run(detkit, "--iou-type", "panoptic",
              "--gt", f"{fixtures}/{expected['ground_truth']}",
              "--gt-dir", f"{fixtures}/{expected['ground_truth_folder']}",
              "--results", f"{fixtures}/{predictions}",
              "--results-dir", f"{fixtures}/{case['prediction_folder']}")
    diffs = []
    for name in ("All", "Things", "Stuff"):
        assert got[name]["n"] == case[name]["n"], (name, got[name]["n"], case[name]["n"])
        diffs += [abs(got[name][k] - case[name][k]) for k in ("pq", "sq", "rq")]
    assert set(got["per_category"]) == set(case["per_class"])
    for cid, scores in case["per_class"].items():
        diffs += [abs(got["per_category"][cid][k] - scores[k]) for k in ("pq", "sq", "rq")]
    print(f"{predictions}: PQ {got['All']['pq']:.6f}, max |diff| to panopticapi {max(diffs):.3g}")
    assert max(diffs) < 1e-9


def check_sem_seg(detkit, fixtures, predictions):
    expected = json.load(open(f"{fixtures}/expected_s1.json"))
    case = next(c for c in expected["cases"] if c["predictions_dir"] == predictions)
    want = case["detectron2_sem_seg_evaluator"]["sem_seg"]
    classes = expected["stuff_classes"]
    got = run(detkit, "--iou-type", "sem_seg", "--gt-dir", f"{fixtures}/gt",
              "--results-dir", f"{fixtures}/{predictions}", "--num-classes", str(len(classes)),
              "--ignore-value", str(expected["ignore_label"]))
    pairs = [(got[k], want[k]) for k in ("mIoU", "fwIoU", "mACC", "pACC")]
    pairs += [(got["IoU"][i], want[f"IoU-{c}"]) for i, c in enumerate(classes)]
    pairs += [(got["ACC"][i], want[f"ACC-{c}"]) for i, c in enumerate(classes)]
    assert len(got["IoU"]) == len(got["ACC"]) == len(classes)
    diffs = []
    for mine, theirs in pairs:
        if theirs is None:
            assert mine is None, (mine, theirs)
        else:
            diffs.append(abs(mine - theirs))
    print(f"{predictions}: mIoU {got['mIoU']:.6f}, max |diff| to Detectron2 {max(diffs):.3g}")
    assert max(diffs) < 1e-9 and not any(math.isnan(d) for d in diffs)


def check_coco(detkit, gt, results, iou_type, expected_file):
    out = subprocess.run([detkit, "evaluate", "--gt", gt, "--results", results, "--iou-type",
                          iou_type, "--json"], check=True, capture_output=True, text=True).stdout
    got = json.loads(out)
    case = next(c for c in json.load(open(expected_file))["cases"]
                if results.endswith(c["results"]))
    diffs = [abs(a - b) for a, b in zip(got["stats"], case["stats"])]
    cat_diffs = []
    for cid, ap in case["per_category_ap"].items():
        mine = got["per_category_ap"][cid]
        if ap is None or mine is None:
            assert ap is None and mine is None, f"category {cid}: {mine} vs {ap}"
            continue
        cat_diffs.append(abs(mine - ap))
    print(f"{case['results']}: max |stat diff| {max(diffs):.3g}, "
          f"max |per-category AP diff| {max(cat_diffs):.3g}")
    assert len(got["stats"]) == (10 if iou_type == "keypoints" else 12) and max(diffs) < 1e-9 and max(cat_diffs) < 1e-9
    assert set(got["per_category_ap"]) == set(case["per_category_ap"])


if sys.argv[2] == "panoptic":
    check_panoptic(sys.argv[1], *sys.argv[3:5])
elif sys.argv[2] == "sem_seg":
    check_sem_seg(sys.argv[1], *sys.argv[3:5])
else:
    check_coco(*sys.argv[1:6])
