#!/usr/bin/env python3
"""python_overhead.py DETKIT SHARED [--images N] [--window A:B]

What a prediction costs from Python against the CLI, on the same images (the first N of
coco_tiny's val2017, default 40) with the Mask R-CNN Detectron2 fixture's model at its test size
(320/480), one image at a time:
  detkit benchmark --task eval: the engine over the mapped images (the C++ loop, its own
    process);
  detkit.engine.DefaultPredictor from Python on the decoded BGR arrays (resize, model,
    Instances/Boxes);
  detkit._C.Predictor, the native call alone, in the same process: the difference to the line
    above is the Python wrapping (Instances, Boxes).
Images A..B-1 of the list are timed (default 10:N), as the benchmark's window. Run with
PYTHONPATH=build/python. Prints images/s side by side and the ratios."""
import argparse
import glob
import json
import os
import subprocess
import tempfile
import time

import numpy as np
from PIL import Image

from detkit import _C
from detkit.config import get_cfg
from detkit.engine import DefaultPredictor


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("detkit")
    parser.add_argument("shared")
    parser.add_argument("--images", type=int, default=40)
    parser.add_argument("--window", default=None)
    args = parser.parse_args()
    begin, end = (int(v) for v in (args.window or f"10:{args.images}").split(":"))
    fixture = f"{args.shared}/fixtures/detectron2"
    val = f"{args.shared}/data/coco_tiny/val2017"
    paths = sorted(glob.glob(f"{val}/*.jpg"))[:args.images]
    coco = json.load(open(f"{args.shared}/data/coco_tiny/annotations/instances_val2017.json"))
    names = {os.path.basename(p) for p in paths}
    order = {os.path.basename(p): k for k, p in enumerate(paths)}
    coco["images"] = sorted((i for i in coco["images"] if i["file_name"] in names),
                            key=lambda i: order[i["file_name"]])
    ids = {i["id"] for i in coco["images"]}
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in ids]
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/val.json", "w") as f:
            json.dump(coco, f)
        out = subprocess.run(
            [args.detkit, "benchmark", "--config-file", f"{fixture}/config.yaml", "--task", "eval",
             "--iters", str(end), "--window", f"{begin}:{end}", "--json",
             "MODEL.WEIGHTS", f"{fixture}/weights.pth", "DATASETS.TEST", "('bench_val',)",
             "OUTPUT_DIR", tmp], check=True, capture_output=True, text=True,
            env=dict(os.environ, DETKIT_DATASETS_REGISTER=f"bench_val={tmp}/val.json:{val}"))
        cli = json.loads(out.stdout)

    cfg = get_cfg()
    cfg.merge_from_file(f"{fixture}/config.yaml")
    cfg.MODEL.WEIGHTS = f"{fixture}/weights.pth"
    predictor = DefaultPredictor(cfg)
    native = _C.Predictor(cfg._tree)
    images = [np.ascontiguousarray(np.asarray(Image.open(p).convert("RGB"))[:, :, ::-1])
              for p in paths]

    def images_per_second(call):
        elapsed = 0.0
        for k, image in enumerate(images[:end]):
            start = time.perf_counter()
            call(image)
            if k >= begin:
                elapsed += time.perf_counter() - start
        return (end - begin) / elapsed

    wrapped = images_per_second(predictor)
    bare = images_per_second(native)
    print(f"{end - begin} images (coco_tiny val2017, {begin}..{end - 1} of the first {args.images}), "
          f"Mask R-CNN fixture at 320/480, {cli['num_threads']} threads")
    print(f"  detkit benchmark --task eval (C++):         {cli['images_per_second']:.2f} images/s")
    print(f"  Python DefaultPredictor:                    {wrapped:.2f} images/s "
          f"({wrapped / cli['images_per_second']:.2f}x the CLI's)")
    print(f"  Python, native call alone (_C.Predictor):   {bare:.2f} images/s")
    print(f"  Python wrapping (Instances, Boxes): {1000 / wrapped - 1000 / bare:.2f} ms per image "
          f"({100 * (1 / wrapped - 1 / bare) * wrapped:.1f} % of a prediction)")


if __name__ == "__main__":
    main()
