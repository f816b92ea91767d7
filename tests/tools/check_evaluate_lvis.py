#!/usr/bin/env python3
"""check_evaluate_lvis.py DETKIT FIXTURE_DIR CASE: runs `detkit evaluate --json` on the LVIS
ground truth of shared/fixtures/lvis_eval and CASE's results file (bbox_easy_s1, ...), and
compares lvis-api's results dict, per-category AP and detection counts with expected_s1.json
(floats to 1e-9, counts exactly)."""
import json
import subprocess
import sys

detkit, fixtures, name = sys.argv[1:4]
expected = json.load(open(f"{fixtures}/expected_s1.json"))
case = next(c for c in expected["cases"] if c["results"] == f"{name}_results.json")
want = case["lvis_api"]
out = subprocess.run([detkit, "evaluate", "--gt", f"{fixtures}/{expected['ground_truth']}",
                      "--results", f"{fixtures}/{case['results']}", "--iou-type",
                      case["iou_type"], "--json"], check=True, capture_output=True, text=True)
got = json.loads(out.stdout)
assert list(got["results"]) == list(want["results"]), (list(got["results"]), list(want["results"]))
diffs = [abs(got["results"][k] - v) for k, v in want["results"].items()]
assert set(got["per_category_ap"]) == set(want["per_category_ap"])
cat_diffs = []
for cid, ap in want["per_category_ap"].items():
    mine = got["per_category_ap"][cid]
    if ap is None or mine is None:
        assert ap is None and mine is None, f"category {cid}: {mine} vs {ap}"
        continue
    cat_diffs.append(abs(mine - ap))
for key in ("n_results_after_cap", "n_detections_evaluated", "n_gt"):
    assert got[key] == want[key], (key, got[key], want[key])
print(f"{name}: AP {got['results']['AP']:.6f}, max |results diff| {max(diffs):.3g}, "
      f"max |per-category AP diff| {max(cat_diffs):.3g}, counts equal")
assert max(diffs) < 1e-9 and max(cat_diffs) < 1e-9
