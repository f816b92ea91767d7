#!/usr/bin/env python3
"""check_keypoint_infer.py FIXTURE IMAGE OUT -- DETKIT_COMMAND...: runs `detkit infer` with
Detectron2's Keypoint R-CNN fixture and checks that every listed detection carries the fixture's
keypoints in COCO's convention (Detectron2's x, y - 0.5; rounded to 0.01) and its score, paired by
box, and that the drawing was written."""
import json
import os
import subprocess
import sys

import torch

fixture, image, out = sys.argv[1:4]
command = sys.argv[sys.argv.index("--") + 1:]
subprocess.run(command, check=True)
stem = os.path.splitext(os.path.basename(image))[0]
detections = json.load(open(os.path.join(out, stem + ".json")))
assert os.path.getsize(os.path.join(out, stem + ".png")) > 0, "no drawing"
outputs = torch.load(os.path.join(fixture, "outputs.pth"))
meta = json.load(open(os.path.join(fixture, "outputs.json")))
index = next(i for i, m in enumerate(meta["images"]) if m["file_name"].endswith(stem + ".jpg"))
boxes = outputs[f"pred_boxes_{index}"].double()
keypoints = outputs[f"pred_keypoints_{index}"].double()
assert detections, "no detections listed"
worst_xy = worst_score = 0.0
for d in detections:
    x, y, w, h = d["bbox"]
    box = torch.tensor([x, y, x + w, y + h], dtype=torch.float64)
    k = int((boxes - box).abs().amax(1).argmin())
    assert (boxes[k] - box).abs().max() < 0.02, f"no fixture box near {d['bbox']}"
    got = torch.tensor(d["keypoints"], dtype=torch.float64).reshape(-1, 3)
    want = keypoints[k].clone()
    want[:, :2] -= 0.5
    worst_xy = max(worst_xy, float((got[:, :2] - want[:, :2]).abs().max()))
    worst_score = max(worst_score, float((got[:, 2] - want[:, 2]).abs().max()))
print(f"{len(detections)} detections; keypoints max |x/y diff| {worst_xy:.3g} px "
      f"(JSON rounded to 0.01), max |score diff| {worst_score:.3g}")
assert worst_xy <= 0.0051 and worst_score < 1e-4
