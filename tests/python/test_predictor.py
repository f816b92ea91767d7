#!/usr/bin/env python3
"""detkit.engine.DefaultPredictor from Python, as a Detectron2 user calls it, on the JPEGs of every
Detectron2 fixture: Detectron2's DefaultPredictor's detections (tests/oracles/detectron2_predictor,
matched sets, keypoints, masks) and `detkit infer`'s (the same engine; another BLAS build: the
same detections to float rounding); then bad input, each a detkit.Error naming what was wrong;
then the Visualizer against `detkit infer`'s drawing.
Usage: test_predictor.py SHARED SOURCE DETKIT"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

import detkit
from detkit.config import get_cfg
from detkit.engine import DefaultPredictor

shared, source, detkit_binary = sys.argv[1:4]
sys.path.insert(0, f"{source}/tests/tools")
from check_detectron2_user_path import (BOX_TOL, KEYPOINT_TOL, MASK_PIXELS_OFF,  # noqa: E402
                                        SCORE_TOL, listed_detections)
from detection_sets import Detections, match, rle_decode, summary  # noqa: E402

if not os.path.exists(f"{shared}/fixtures/detectron2/weights.pth"):
    print(f"skipped: the Detectron2 fixtures are absent ({shared}/fixtures)")
    sys.exit(77)


def bgr(path):
    """What cv2.imread gives: (H, W, 3) uint8, BGR."""
    return np.ascontiguousarray(np.asarray(Image.open(path).convert("RGB"))[:, :, ::-1])


def as_detections(instances):
    masks = None
    if instances.has("pred_masks"):
        masks = [m.t().reshape(-1) for m in instances.pred_masks]  # column-major, as RLEs decode
    keypoints = instances.pred_keypoints.double().tolist() if instances.has("pred_keypoints") else None
    return Detections(instances.pred_boxes.tensor.double().tolist(), instances.scores.double().tolist(),
                      instances.pred_classes.tolist(), masks, keypoints)


failures = []
for fixture in ["detectron2", "detectron2_keypoint", "detectron2_retinanet", "detectron2_cascade"]:
    directory = f"{shared}/fixtures/{fixture}"
    oracle = json.load(open(f"{source}/tests/oracles/detectron2_predictor/{fixture}.json"))
    cfg = get_cfg()
    cfg.merge_from_file(f"{directory}/config.yaml")
    cfg.MODEL.WEIGHTS = f"{directory}/weights.pth"
    predictor = DefaultPredictor(cfg)
    paths = [f"{shared}/data/coco_tiny/{image['file_name']}" for image in oracle["images"]]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([detkit_binary, "infer", "--config-file", f"{directory}/config.yaml",
                        "--weights", cfg.MODEL.WEIGHTS, "--input", *paths, "--output", out,
                        "--confidence", "0"], check=True, capture_output=True)
        listed = {p: listed_detections(json.load(open(os.path.join(
            out, os.path.splitext(os.path.basename(p))[0] + ".json")))) for p in paths}
    for image, path in zip(oracle["images"], paths):
        instances = predictor(bgr(path))["instances"]
        assert instances.image_size == (image["height"], image["width"])
        ours = as_detections(instances)
        masks = [rle_decode(m["counts"], *m["size"]) for m in image["pred_masks"]] \
            if "pred_masks" in image else None
        reference = Detections(image["pred_boxes"], image["scores"], image["pred_classes"], masks,
                               image.get("pred_keypoints"))
        _, vs_d2 = match(ours, reference, BOX_TOL, SCORE_TOL)
        # The same engine on the same torch (its BLAS, oneDNN and OpenMP in both processes):
        # held to the tolerances used against Detectron2.
        _, vs_infer = match(ours, listed[path], BOX_TOL, SCORE_TOL)
        stem = os.path.basename(path)
        print(f"[ python {fixture} ] {stem} vs Detectron2: {summary(len(ours), len(reference), vs_d2)}")
        print(f"[ python {fixture} ] {stem} vs detkit infer: "
              f"{summary(len(ours), len(listed[path]), vs_infer)}")
        if (len(ours) != len(reference) or vs_d2["unexplained"]
                or vs_d2.get("keypoint_xy", 0) > KEYPOINT_TOL or vs_d2.get("keypoint_tie_jumps", 0)
                or vs_d2.get("mask_pixels_off", 0) > MASK_PIXELS_OFF):
            failures.append(f"{fixture} {stem}: not Detectron2's detections")
        if vs_infer["matched"] != len(listed[path]) or len(ours) != len(listed[path]):
            failures.append(f"{fixture} {stem}: not detkit infer's detections")

# Bad input: each a detkit.Error (a RuntimeError) naming it; a strided view is accepted.
image = bgr(f"{shared}/data/coco_tiny/val2017/000000532481.jpg")
for bad, expected in [(image.astype(np.float32), "must be uint8 (H, W, 3) as cv2.imread gives, "
                                                 "got float32 of shape (426, 640, 3)"),
                      (image[:, :, :2], "must have shape (H, W, 3) with H, W > 0, got (426, 640, 2)"),
                      (image[:0], "got (0, 640, 3)"),
                      ("image.jpg", "must be a numpy.ndarray (H, W, 3) of uint8 in BGR order, got "
                                    "Python str")]:
    try:
        predictor(bad)
        failures.append(f"no error for {expected}")
    except detkit.Error as e:
        print(f"bad input: {e}")
        if expected not in str(e):
            failures.append(f"'{e}' does not say '{expected}'")
flipped = predictor(image[:, :, ::-1])["instances"]  # Detectron2 takes views; so does detkit
again = predictor(np.ascontiguousarray(image[:, :, ::-1]))["instances"]
assert flipped.scores.equal(again.scores), "a strided view gave another answer than its copy"
cfg = get_cfg()
cfg.merge_from_file(f"{shared}/fixtures/detectron2/config.yaml")
try:
    DefaultPredictor(cfg)
    failures.append("no error for an empty MODEL.WEIGHTS")
except detkit.Error as e:
    print(f"bad config: {e}")
# Visualizer: detkit's drawer, so the drawing of the detections scoring >= 0.5 is `detkit infer
# --confidence 0.5`'s PNG (RetinaNet's: Python's and the CLI's scores are equal there), pixel for
# pixel; scale resizes it as Detectron2's does.
from detkit.utils.visualizer import Visualizer  # noqa: E402

directory = f"{shared}/fixtures/detectron2_retinanet"
path = f"{shared}/data/coco_tiny/val2017/000000532481.jpg"
cfg = get_cfg()
cfg.merge_from_file(f"{directory}/config.yaml")
cfg.MODEL.WEIGHTS = f"{directory}/weights.pth"
rgb = np.asarray(Image.open(path).convert("RGB"))
instances = DefaultPredictor(cfg)(np.ascontiguousarray(rgb[:, :, ::-1]))["instances"]
kept = instances[instances.scores >= 0.5]
drawn = Visualizer(rgb, None, scale=1.0).draw_instance_predictions(kept).get_image()
with tempfile.TemporaryDirectory() as out:
    subprocess.run([detkit_binary, "infer", "--config-file", f"{directory}/config.yaml", "--weights",
                    cfg.MODEL.WEIGHTS, "--input", path, "--output", out, "--confidence", "0.5",
                    "DATASETS.TEST", "()"], check=True, capture_output=True)
    png = np.asarray(Image.open(f"{out}/000000532481.png").convert("RGB"))
differing = float((png != drawn).any(axis=2).mean())
print(f"Visualizer: {len(kept)} detections drawn, {100 * (drawn != rgb).any(axis=2).mean():.1f} % of "
      f"the pixels changed; pixels differing from detkit infer's PNG: {100 * differing:.3f} %")
if drawn.shape != rgb.shape or differing > 0:
    failures.append("Visualizer's drawing is not detkit infer's")
half = Visualizer(rgb, None, scale=0.5).draw_instance_predictions(kept).get_image()
if half.shape != (213, 320, 3):
    failures.append(f"scale=0.5 drew {half.shape}")
# An RPN-only model (Detectron2's ProposalNetwork) gives {"proposals": Instances} with
# proposal_boxes and objectness_logits, as Detectron2's does. Image 0 fills the fixture's padded
# batch, so alone it has Detectron2's proposals (image 1 alone is padded less than in that batch).
import torch  # noqa: E402

rpn_dir = f"{shared}/fixtures/detectron2_rpn"
cfg = get_cfg()
cfg.merge_from_file(f"{rpn_dir}/config.yaml")
cfg.MODEL.WEIGHTS = f"{rpn_dir}/weights.pth"
output = DefaultPredictor(cfg)(bgr(f"{shared}/data/coco_tiny/val2017/000000532481.jpg"))
reference = torch.load(f"{rpn_dir}/outputs.pth")
if list(output) != ["proposals"]:
    failures.append(f"RPN-only predictor returned {list(output)}, not ['proposals']")
else:
    proposals = output["proposals"]
    boxes, logits = proposals.proposal_boxes.tensor, proposals.objectness_logits
    want_boxes, want_logits = reference["proposal_boxes_0"], reference["proposal_logits_0"]
    # Each reference proposal paired with our nearest one (near-tied logits may swap places).
    distance = (boxes[:, None, :] - want_boxes[None, :, :]).abs().amax(dim=2)
    box_diff, partner = distance.min(dim=0)
    logit_diff = (logits[partner] - want_logits).abs().max().item()
    print(f"[ python detectron2_rpn ] 000000532481.jpg: {len(boxes)} proposals vs "
          f"{len(want_boxes)}, max abs diff {box_diff.max().item():.3g} px, logits {logit_diff:.3g}")
    if (len(boxes) != len(want_boxes) or box_diff.max().item() > 5e-3 or logit_diff > 1e-4
            or len(set(partner.tolist())) != len(want_boxes)):
        failures.append("RPN-only predictor: not Detectron2's proposals")
# Panoptic FPN gives "instances", "sem_seg" and "panoptic_seg" (the id map and segments_info, as
# Detectron2's); SemanticSegmentor "sem_seg" alone. Image 0 fills the fixture's padded batch.
panoptic_dir = f"{shared}/fixtures/detectron2_panoptic"
panoptic_meta = json.load(open(f"{panoptic_dir}/outputs.json"))["images"][0]
panoptic_reference = torch.load(f"{panoptic_dir}/outputs.pth")
image0 = bgr(f"{shared}/data/coco_tiny/val2017/000000532481.jpg")
cfg = get_cfg()
cfg.merge_from_file(f"{panoptic_dir}/config.yaml")
cfg.MODEL.WEIGHTS = f"{panoptic_dir}/weights.pth"
output = DefaultPredictor(cfg)(image0)
if sorted(output) != ["instances", "panoptic_seg", "sem_seg"]:
    failures.append(f"PanopticFPN predictor returned {sorted(output)}")
else:
    ids, segments = output["panoptic_seg"]
    sem_seg_diff = (output["sem_seg"][:, ::8, ::8] - panoptic_reference["sem_seg_every8_0"]).abs().max().item()
    want = panoptic_meta["segments_info"]
    same = [(s["id"], s["isthing"], s["category_id"]) for s in segments] == [
        (s["id"], s["isthing"], s["category_id"]) for s in want]
    score_diff = max([abs(s["score"] - w["score"]) for s, w in zip(segments, want) if s["isthing"]] + [0])
    print(f"[ python detectron2_panoptic ] 000000532481.jpg: {len(output['instances'])} instances, "
          f"{len(segments)} segments vs {len(want)} (ids, kinds, categories "
          f"{'equal' if same else 'DIFFERENT'}, scores {score_diff:.3g}), id map {tuple(ids.shape)} "
          f"{ids.dtype}, sem_seg max abs diff {sem_seg_diff:.3g}")
    if not same or score_diff > 1e-4 or sem_seg_diff > 1e-4 or ids.dtype != torch.int32:
        failures.append("PanopticFPN predictor: not Detectron2's panoptic output")
cfg.MODEL.META_ARCHITECTURE = "SemanticSegmentor"
output = DefaultPredictor(cfg)(image0)
if list(output) != ["sem_seg"] or tuple(output["sem_seg"].shape) != (4, 426, 640):
    failures.append(f"SemanticSegmentor predictor returned {list(output)}")
if failures:
    sys.exit("; ".join(failures))
print("DefaultPredictor and Visualizer from Python: all checks passed")
