#!/usr/bin/env python3
"""1000 predictions from Python keep the process's memory flat: RSS after the first 100 (warm-up:
allocator pools, oneDNN primitives) and after all 1000, printed; growth over 16 MB fails.
The Mask R-CNN fixture on a small image (20 masks pasted every call), on one thread: a second
thread gains nothing on an image this small (37 s either way, AMD EPYC Zen 4), and two processes
of two threads each under ctest -j2 took 145 s each.
Usage: test_predictor_memory.py SHARED SOURCE DETKIT"""
import os
import sys

import numpy as np
from PIL import Image

import detkit
from detkit.config import get_cfg
from detkit.engine import DefaultPredictor

shared = sys.argv[1]
directory = f"{shared}/fixtures/detectron2"
if not os.path.exists(f"{directory}/weights.pth"):
    print(f"skipped: the Detectron2 fixture is absent ({directory})")
    sys.exit(77)


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024


detkit.configure_threads(1)
cfg = get_cfg()
cfg.merge_from_file(f"{directory}/config.yaml")
cfg.merge_from_list(["MODEL.WEIGHTS", f"{directory}/weights.pth", "INPUT.MIN_SIZE_TEST", "96",
                     "INPUT.MAX_SIZE_TEST", "128", "TEST.DETECTIONS_PER_IMAGE", "20"])
predictor = DefaultPredictor(cfg)
image = np.ascontiguousarray(np.asarray(
    Image.open(f"{shared}/data/coco_tiny/val2017/000000532481.jpg").convert("RGB")
    .resize((128, 85)))[:, :, ::-1])
count = 0
for i in range(1000):
    count += len(predictor(image)["instances"])
    if i == 99:
        warm = rss_mb()
final = rss_mb()
print(f"RSS after 100 predictions {warm:.1f} MB, after 1000 {final:.1f} MB "
      f"(+{final - warm:.1f} MB); {count} detections in all")
assert final - warm < 16, "memory grows with each prediction"
