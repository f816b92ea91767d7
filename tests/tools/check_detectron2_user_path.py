#!/usr/bin/env python3
"""check_detectron2_user_path.py PATH ORACLE OUTDIR [--gt GT.json --register-as NAME]
   -- DETKIT_COMMAND...

Runs a user's command on the JPEGs of a Detectron2 fixture and compares what it wrote with what
Detectron2's DefaultPredictor gives on each JPEG alone (ORACLE: tests/oracles/detectron2_predictor/
<fixture>.json, made by tests/tools/make_detectron2_predictor_oracle.py): detections as matched
sets (tests/tools/detection_sets.py), keypoints, masks by IoU. Prints the max differences per
image; exits non-zero when one is over its tolerance.

PATH infer: `detkit infer --confidence 0 --output OUTDIR` wrote OUTDIR/<stem>.json per image.
PATH eval:  `detkit train --eval-only` wrote OUTDIR/inference/coco_instances_results.json;
  with --gt, the ground truth of the oracle's images is first written to OUTDIR/<NAME>.json (the
  images of GT.json that the oracle holds, all its categories), which the command's
  DETKIT_DATASETS_REGISTER registers as NAME.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from detection_sets import Detections, match, rle_decode, summary  # noqa: E402

# The fixtures' READMEs: Detectron2 against itself on 1 vs 2 threads differs by up to 1.2e-4 px
# in boxes, 2.1e-6 in scores, 1.2e-4 px in keypoints and a few mask pixels; match boxes to 1e-3 px,
# scores to 1e-4, keypoints to 1e-3 px, masks to 0.1 % of the image's pixels. The results' JSON
# rounds nothing, infer's rounds coordinates to 1e-4 px.
BOX_TOL, SCORE_TOL, KEYPOINT_TOL, MASK_PIXELS_OFF = 1e-3, 1e-4, 1e-3, 1e-3


def mask_of(segmentation):
    h, w = segmentation["size"]
    return rle_decode(segmentation["counts"], h, w)


def oracle_detections(image):
    masks = [mask_of(m) for m in image["pred_masks"]] if "pred_masks" in image else None
    return Detections(image["pred_boxes"], image["scores"], image["pred_classes"], masks,
                      image.get("pred_keypoints"))


def listed_detections(listed, class_of_category=None):
    """COCO results entries (XYWH boxes, keypoints as pixel indices) -> Detections in the
    model's terms (XYXY, continuous keypoints, contiguous classes)."""
    boxes, scores, classes, masks, keypoints = [], [], [], [], []
    for d in listed:
        x, y, w, h = d["bbox"]
        boxes.append([x, y, x + w, y + h])
        scores.append(d["score"])
        classes.append(class_of_category[d["category_id"]] if class_of_category else d["class"])
        if "segmentation" in d:
            masks.append(mask_of(d["segmentation"]))
        if "keypoints" in d:
            k = d["keypoints"]
            keypoints.append([[k[i] + 0.5, k[i + 1] + 0.5, k[i + 2]] for i in range(0, len(k), 3)])
    return Detections(boxes, scores, classes, masks if masks else None,
                      keypoints if keypoints else None)


def write_ground_truth(gt_path, image_ids, out_path):
    gt = json.load(open(gt_path))
    gt["images"] = [i for i in gt["images"] if i["id"] in image_ids]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] in image_ids]
    with open(out_path, "w") as f:
        json.dump(gt, f)
    return {c["id"]: k for k, c in enumerate(sorted(gt["categories"], key=lambda c: c["id"]))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("path", choices=["infer", "eval"])
    parser.add_argument("oracle")
    parser.add_argument("outdir")
    parser.add_argument("--gt")
    parser.add_argument("--register-as")
    split = sys.argv.index("--")
    args = parser.parse_args(sys.argv[1:split])
    command = sys.argv[split + 1:]
    oracle = json.load(open(args.oracle))
    shutil.rmtree(args.outdir, ignore_errors=True)
    os.makedirs(args.outdir)
    class_of_category = None
    if args.path == "eval":
        class_of_category = write_ground_truth(
            args.gt, {i["image_id"] for i in oracle["images"]},
            os.path.join(args.outdir, args.register_as + ".json"))
    subprocess.run(command, check=True)

    if args.path == "eval":
        results = json.load(open(os.path.join(args.outdir, "inference",
                                              "coco_instances_results.json")))
    failures = []
    for image in oracle["images"]:
        stem = os.path.splitext(os.path.basename(image["file_name"]))[0]
        if args.path == "infer":
            listed = json.load(open(os.path.join(args.outdir, stem + ".json")))
        else:
            listed = [r for r in results if r["image_id"] == image["image_id"]]
        ours = listed_detections(listed, class_of_category)
        reference = oracle_detections(image)
        _, report = match(ours, reference, BOX_TOL, SCORE_TOL)
        print(f"[ {args.path} {oracle['fixture']} ] {stem} (input {image['input_hw'][0]}x"
              f"{image['input_hw'][1]}): {summary(len(ours), len(reference), report)}")
        if len(ours) != len(reference) or report["unexplained"]:
            failures.append(f"{stem}: detections differ")
        if (report.get("keypoint_xy", 0) > KEYPOINT_TOL or report.get("keypoint_score", 0) > SCORE_TOL
                or report.get("keypoint_tie_jumps", 0) > 0):
            failures.append(f"{stem}: keypoints differ")
        if report.get("mask_pixels_off", 0.0) > MASK_PIXELS_OFF:
            failures.append(f"{stem}: masks differ")
        if reference.keypoints is not None and ours.keypoints is None:
            failures.append(f"{stem}: no keypoints listed")
        if reference.masks is not None and ours.masks is None:
            failures.append(f"{stem}: no masks listed")
    if failures:
        sys.exit("; ".join(failures))


if __name__ == "__main__":
    main()
