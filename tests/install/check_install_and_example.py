#!/usr/bin/env python3
"""check_install_and_example.py BUILD EXAMPLE WORK FIXTURE IMAGE: installs the detkit build in
BUILD into WORK/prefix, configures and builds the example project EXAMPLE against that prefix
alone (a fresh CMake build folder, nothing of BUILD on its paths), runs `predict` with the
Detectron2 fixture's config and weights on IMAGE, and checks that its lines are the fixture's
detections of that image: the same count, and each line's box, score and class those of a
fixture detection (boxes within 1e-3 px, scores within 1e-4: Detectron2's own run-to-run
spread, see the fixture's README)."""
import json
import os
import shutil
import subprocess
import sys

import torch

build, example, work, fixture, image = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
prefix, example_build = os.path.join(work, "prefix"), os.path.join(work, "build")


def run(command):
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


run(["cmake", "--install", build, "--prefix", prefix])
for needed in ["lib/cmake/detkit/detkitConfig.cmake", "include/detkit/engine/predictor.h",
               "lib/libdetkit_predictor.so", "bin/detkit"]:
    assert os.path.exists(os.path.join(prefix, needed)), f"not installed: {needed}"
run(["cmake", "-S", example, "-B", example_build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
     f"-DCMAKE_PREFIX_PATH={prefix}"])
run(["cmake", "--build", example_build])
lines = run([os.path.join(example_build, "predict"), os.path.join(fixture, "config.yaml"),
             os.path.join(fixture, "weights.pth"), image]).split("\n")
found = [[float(v) for v in line.split()] for line in lines if line.strip()]
assert all(len(f) == 6 for f in found), "a line is not 'x0 y0 x1 y1 score class'"

outputs = torch.load(os.path.join(fixture, "outputs.pth"))
meta = json.load(open(os.path.join(fixture, "outputs.json")))
stem = os.path.basename(image)
index = next(i for i, m in enumerate(meta["images"]) if m["file_name"].endswith(stem))
boxes = outputs[f"pred_boxes_{index}"].double()
scores = outputs[f"scores_{index}"].double()
classes = outputs[f"pred_classes_{index}"]
assert len(found) == len(boxes), f"{len(found)} detections, the fixture has {len(boxes)}"
taken = set()
worst_box = worst_score = 0.0
for f in found:
    box = torch.tensor(f[:4], dtype=torch.float64)
    same = [k for k in range(len(boxes)) if k not in taken and int(classes[k]) == int(f[5])]
    assert same, f"no fixture detection of class {int(f[5])} left for {f}"
    k = min(same, key=lambda k: float((boxes[k] - box).abs().max()))
    taken.add(k)
    worst_box = max(worst_box, float((boxes[k] - box).abs().max()))
    worst_score = max(worst_score, abs(float(scores[k]) - f[4]))
print(f"installed detkit: examples/predict printed {len(found)} detections, each a fixture "
      f"detection: max abs diff boxes {worst_box:.3g} px, scores {worst_score:.3g}")
assert worst_box < 1e-3 + 1e-4 and worst_score < 1e-4 + 1e-6  # + the 4 / 6 printed decimals
