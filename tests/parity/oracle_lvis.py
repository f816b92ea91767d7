"""Parity oracle for detkit's LVIS loading (detkit/data/coco/lvis.h) and repeat factors.

The records are made as Detectron2's load_lvis_json (detectron2/data/datasets/lvis.py) makes them
from lvis-api's index: images sorted by id, each with the annotations lvis-api maps to it in file
order; file name = image_root + the last two '/'-parts of coco_url; category_id - 1 as the class;
neg_category_ids and not_exhaustive_category_ids as listed ([] when absent). Neither Detectron2
nor lvis-api is installed here, so the few lines they run are transcribed below. The repeat
factors are Detectron2's RepeatFactorTrainingSampler.repeat_factors_from_category_frequency over
those records (optionally after filter_images_with_only_crowd_annotations, which for LVIS keeps the
images with an annotation).

Usage: python3 oracle_lvis.py IN.pt OUT.pt MODE
IN.pt: json (uint8, the LVIS file's path), image_root (uint8).
MODE "load": writes image_ids, heights, widths (N) int64; file_names (uint8, '\\n'-joined);
    ann_image (A) int64 (the record of each annotation, records' order then file order),
    ann_class (A) int64, ann_bbox (A, 4) float64, ann_num_polygons (A) int64,
    polygon_sizes (P) int64, coords (sum of sizes) float64; neg_sizes, not_exhaustive_sizes (N)
    int64 and neg_ids, not_exhaustive_ids (flattened) int64.
MODE "repeat": IN.pt also thresholds (T) float64, filter_empty (1) int64. Writes factors (T, N)
    float32: the repeat factor of each record (after the filter when asked) per threshold.
"""
import json
import math
import os
import sys
from collections import defaultdict

import torch


def text(t):
    return bytes(t.tolist()).decode()


def load_lvis_records(json_file, image_root):
    with open(json_file) as f:
        dataset = json.load(f)
    # lvis-api's LVIS._create_index: images by id (a repeated id keeps the last), annotations
    # per image in file order.
    imgs = {img["id"]: img for img in dataset["images"]}
    img_ann_map = defaultdict(list)
    for ann in dataset["annotations"]:
        img_ann_map[ann["image_id"]].append(ann)
    records = []
    for img_id in sorted(imgs.keys()):
        img = imgs[img_id]
        split_folder, file_name = img["coco_url"].split("/")[-2:]
        record = {
            "file_name": os.path.join(image_root + split_folder, file_name),
            "height": img["height"],
            "width": img["width"],
            "not_exhaustive_category_ids": img.get("not_exhaustive_category_ids", []),
            "neg_category_ids": img.get("neg_category_ids", []),
            "image_id": img_id,
        }
        objs = []
        for ann in img_ann_map[img_id]:
            assert ann["image_id"] == img_id
            segm = ann["segmentation"]
            assert len(segm) > 0 and all(len(p) % 2 == 0 and len(p) >= 6 for p in segm)
            objs.append({"bbox": ann["bbox"], "category_id": ann["category_id"] - 1,
                         "segmentation": segm})
        record["annotations"] = objs
        records.append(record)
    return records


def repeat_factors_from_category_frequency(dataset_dicts, repeat_thresh, sqrt=True):
    category_freq = defaultdict(int)
    for d in dataset_dicts:
        for cat_id in {ann["category_id"] for ann in d["annotations"]}:
            category_freq[cat_id] += 1
    num_images = len(dataset_dicts)
    for k, v in category_freq.items():
        category_freq[k] = v / num_images
    category_rep = {
        c: max(1.0, math.sqrt(repeat_thresh / f) if sqrt else repeat_thresh / f)
        for c, f in category_freq.items()
    }
    factors = []
    for d in dataset_dicts:
        cat_ids = {ann["category_id"] for ann in d["annotations"]}
        factors.append(max({category_rep[c] for c in cat_ids}, default=1.0))
    return torch.tensor(factors, dtype=torch.float32)


def main():
    inputs = torch.load(sys.argv[1], weights_only=False)  # libtorch's pickle
    out_path, mode = sys.argv[2], sys.argv[3]
    records = load_lvis_records(text(inputs["json"]), text(inputs["image_root"]))
    out = {}
    if mode == "load":
        i64 = lambda xs: torch.tensor(xs, dtype=torch.int64)
        out["image_ids"] = i64([r["image_id"] for r in records])
        out["heights"] = i64([r["height"] for r in records])
        out["widths"] = i64([r["width"] for r in records])
        out["file_names"] = torch.tensor(
            list("\n".join(r["file_name"] for r in records).encode()), dtype=torch.uint8)
        anns = [(i, a) for i, r in enumerate(records) for a in r["annotations"]]
        out["ann_image"] = i64([i for i, _ in anns])
        out["ann_class"] = i64([a["category_id"] for _, a in anns])
        out["ann_bbox"] = torch.tensor([a["bbox"] for _, a in anns], dtype=torch.float64)
        out["ann_num_polygons"] = i64([len(a["segmentation"]) for _, a in anns])
        polygons = [p for _, a in anns for p in a["segmentation"]]
        out["polygon_sizes"] = i64([len(p) for p in polygons])
        out["coords"] = torch.tensor([x for p in polygons for x in p], dtype=torch.float64)
        for key, name in (("neg_category_ids", "neg"),
                          ("not_exhaustive_category_ids", "not_exhaustive")):
            out[name + "_sizes"] = i64([len(r[key]) for r in records])
            out[name + "_ids"] = i64([c for r in records for c in r[key]])
    elif mode == "repeat":
        if int(inputs["filter_empty"][0]):
            records = [r for r in records
                       if any(a.get("iscrowd", 0) == 0 for a in r["annotations"])]
        out["factors"] = torch.stack([
            repeat_factors_from_category_frequency(records, float(t))
            for t in inputs["thresholds"].tolist()])
        out["num_records"] = torch.tensor([len(records)])  # libtorch needs two entries
    else:
        raise SystemExit(f"unknown mode {mode}")
    torch.save(out, out_path)


if __name__ == "__main__":
    main()
