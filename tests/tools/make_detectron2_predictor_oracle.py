#!/usr/bin/env python3
"""make_detectron2_predictor_oracle.py SHARED OUT_DIR [FIXTURE ...]

Writes OUT_DIR/<fixture>.json: what Detectron2's DefaultPredictor returns for each JPEG of a
Detectron2 fixture (SHARED/fixtures/<fixture>: config.yaml, weights.pth, outputs.json), each
image alone, as a user runs it (detection_utils.read_image, the test-time ResizeShortestEdge,
the model on a batch of one). Needs Detectron2 importable (it is not a Debian package; see
tests/oracles/detectron2_predictor/README.md for how these files were made). Checks first that
the loaded weights are the fixture's, bit for bit.

The fixtures' own pred_boxes_i are one forward of both images as one batch, padded to the larger
(320x480); an image alone is padded to its own size (a multiple of 32), and what the network
computes over the extra padding changes the smaller image's detections. The user's paths
(DefaultPredictor, demo.py, evaluation's test loader of batch size 1) run each image alone.
"""
import json
import os
import sys

import detectron2
import torch
from detectron2.config import get_cfg
from detectron2.data.detection_utils import read_image
from detectron2.engine import DefaultPredictor
import pycocotools.mask as mask_util

FIXTURES = ["detectron2", "detectron2_keypoint", "detectron2_retinanet", "detectron2_cascade"]


def floats(t):
    return t.double().tolist()


def instances_json(instances):
    out = {
        "pred_boxes": floats(instances.pred_boxes.tensor),
        "scores": floats(instances.scores),
        "pred_classes": instances.pred_classes.tolist(),
    }
    if instances.has("pred_keypoints"):
        out["pred_keypoints"] = floats(instances.pred_keypoints)
    if instances.has("pred_masks"):
        masks = instances.pred_masks.numpy().astype("uint8")
        out["pred_masks"] = []
        for mask in masks:
            rle = mask_util.encode(mask[:, :, None].copy(order="F"))[0]
            out["pred_masks"].append({"size": rle["size"], "counts": rle["counts"].decode()})
    return out


def make(shared, fixture):
    directory = os.path.join(shared, "fixtures", fixture)
    cfg = get_cfg()
    cfg.merge_from_file(os.path.join(directory, "config.yaml"))
    cfg.MODEL.DEVICE = "cpu"
    cfg.MODEL.WEIGHTS = os.path.join(directory, "weights.pth")
    predictor = DefaultPredictor(cfg)
    weights = torch.load(cfg.MODEL.WEIGHTS)
    loaded = predictor.model.state_dict()
    assert set(weights) == set(loaded), f"{fixture}: the model's keys are not the weights' keys"
    assert all(torch.equal(weights[k], loaded[k]) for k in weights), f"{fixture}: weights differ"
    meta = json.load(open(os.path.join(directory, "outputs.json")))
    images = []
    for image in meta["images"]:
        path = os.path.join(shared, "data", "coco_tiny", image["file_name"])
        bgr = read_image(path, format="BGR")  # what demo.py and DefaultPredictor users pass
        with torch.no_grad():
            instances = predictor(bgr)["instances"]
        entry = {k: image[k] for k in ("file_name", "image_id", "height", "width", "input_hw")}
        entry.update(instances_json(instances))
        images.append(entry)
        print(f"{fixture} {image['file_name']}: {len(instances)} detections")
    return {
        "fixture": fixture,
        "made_with": f"Detectron2 {detectron2.__version__}, torch {torch.__version__}, CPU, "
                     f"{torch.get_num_threads()} thread(s); DefaultPredictor, each image alone",
        "images": images,
    }


def main():
    shared, out_dir = sys.argv[1:3]
    torch.set_num_threads(1)  # as the fixtures were made
    os.makedirs(out_dir, exist_ok=True)
    for fixture in sys.argv[3:] or FIXTURES:
        with open(os.path.join(out_dir, fixture + ".json"), "w") as f:
            json.dump(make(shared, fixture), f)
            f.write("\n")


if __name__ == "__main__":
    main()
