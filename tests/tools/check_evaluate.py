#!/usr/bin/env python3
"""check_evaluate.py DETKIT GT RESULTS IOU_TYPE EXPECTED: runs `detkit evaluate --json` and
compares its stats and per-category AP with pycocotools' numbers in EXPECTED (to 1e-9)."""
import json
import subprocess
import sys

detkit, gt, results, iou_type, expected_file = sys.argv[1:6]
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
