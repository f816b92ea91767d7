#!/usr/bin/env python3
"""compare_infer_with_detectron2.py DETKIT FIXTURE_DIR OUT_DIR [--images A.jpg B.jpg ... | --all]
       [--perturb SEED] [-- KEY VALUE ...]

`detkit infer` against Detectron2's DefaultPredictor on the same JPEGs, each image alone, with a
fixture's config (and KEY VALUE overrides, given to both) and its weights, or with other weights:
--perturb SEED multiplies every weight tensor elementwise by 1 + 0.05 * N(0, 1) (torch seed SEED)
and gives both the result. --all takes every image of SHARED/data/coco_tiny/val2017 (landscape
and portrait, several sizes). Prints per image the matched-set summary (tests/tools/detection_sets.py)
and exits 1 when an image's detections, keypoints or masks differ beyond the tolerances of
check_detectron2_user_path.py.

Needs Detectron2 importable (not a Debian package: see tests/oracles/detectron2_predictor/README.md
for how it was run here); exits 77 (skipped) without it.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_detectron2_user_path import (BOX_TOL, KEYPOINT_TOL, MASK_PIXELS_OFF,  # noqa: E402
                                        SCORE_TOL, listed_detections)
from detection_sets import Detections, match, summary  # noqa: E402

try:
    from detectron2.config import get_cfg
    from detectron2.data.detection_utils import read_image
    from detectron2.engine import DefaultPredictor
except ImportError as e:
    print(f"skipped: Detectron2 is not importable ({e})")
    sys.exit(77)


# Keypoints that may move to another heatmap cell of the same value (detection_sets.py) per image:
# a tie is rare; a bug in placing keypoints would move many.
MAX_TIE_JUMPS = 2


def detectron2_detections(predictor, path):
    with torch.no_grad():
        instances = predictor(read_image(path, format="BGR"))["instances"]
    masks = None
    if instances.has("pred_masks"):
        # Column-major flat masks, as detection_sets decodes RLEs.
        masks = [m.t().reshape(-1) for m in instances.pred_masks]
    keypoints = instances.pred_keypoints.double().tolist() if instances.has("pred_keypoints") else None
    return Detections(instances.pred_boxes.tensor.double().tolist(), instances.scores.double().tolist(),
                      instances.pred_classes.tolist(), masks, keypoints)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("detkit")
    parser.add_argument("fixture")
    parser.add_argument("out")
    parser.add_argument("--images", nargs="+")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--perturb", type=int)
    split = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
    args = parser.parse_args(sys.argv[1:split])
    args.overrides = sys.argv[split + 1:]
    shared = os.path.dirname(os.path.dirname(os.path.abspath(args.fixture)))
    images = args.images or []
    if args.all:
        images = sorted(glob.glob(os.path.join(shared, "data", "coco_tiny", "val2017", "*.jpg")))
    assert images, "no images: give --images or --all"
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)

    weights = os.path.join(args.fixture, "weights.pth")
    if args.perturb is not None:
        generator = torch.Generator().manual_seed(args.perturb)
        state = torch.load(weights)
        state = {k: v * (1 + 0.05 * torch.randn(v.shape, generator=generator))
                 if v.is_floating_point() else v for k, v in state.items()}
        weights = os.path.join(args.out, f"weights_perturbed_{args.perturb}.pth")
        torch.save(state, weights)

    cfg = get_cfg()
    cfg.merge_from_file(os.path.join(args.fixture, "config.yaml"))
    cfg.merge_from_list(args.overrides)
    cfg.MODEL.DEVICE = "cpu"
    cfg.MODEL.WEIGHTS = weights
    predictor = DefaultPredictor(cfg)

    infer_out = os.path.join(args.out, "infer")
    subprocess.run([args.detkit, "infer", "--config-file", os.path.join(args.fixture, "config.yaml"),
                    "--weights", weights, "--input", *images, "--output", infer_out,
                    "--confidence", "0", *args.overrides], check=True)
    bad = 0
    for path in images:
        stem = os.path.splitext(os.path.basename(path))[0]
        ours = listed_detections(json.load(open(os.path.join(infer_out, stem + ".json"))))
        reference = detectron2_detections(predictor, path)
        _, report = match(ours, reference, BOX_TOL, SCORE_TOL)
        ok = (len(ours) == len(reference) and not report["unexplained"]
              and report.get("keypoint_xy", 0) <= KEYPOINT_TOL
              and report.get("keypoint_tie_jumps", 0) <= MAX_TIE_JUMPS
              and report.get("mask_pixels_off", 0.0) <= MASK_PIXELS_OFF)
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {stem}: {summary(len(ours), len(reference), report)}")
    print(f"{len(images) - bad} of {len(images)} images match Detectron2's DefaultPredictor")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
