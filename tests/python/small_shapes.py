"""A fresh folder under the test's working directory with a small shapes dataset in it, made by
`detkit make-shapes` (96x64 images): what the Python training tests train on; and its splits as
Detectron2's dicts, as a user's get_*_dicts() builds them."""
import json
import os
import shutil
import subprocess

from detkit.structures import BoxMode


def small_shapes(detkit_binary, folder, train, val, seed):
    """Returns the folder; the dataset is <folder>/shapes/{annotations,train,val}."""
    work = os.path.join(os.getcwd(), folder)
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run([detkit_binary, "make-shapes", "--out", f"{work}/shapes", "--train", str(train),
                    "--val", str(val), "--size", "96x64", "--seed", str(seed)], check=True,
                   capture_output=True)
    return work


def shapes_dicts(work, split):
    """Detectron2's dicts of a split of the dataset in `work`, and its thing_classes."""
    coco = json.load(open(f"{work}/shapes/annotations/instances_{split}.json"))
    categories = sorted(coco["categories"], key=lambda c: c["id"])
    contiguous = {c["id"]: k for k, c in enumerate(categories)}
    records = {}
    for image in coco["images"]:
        records[image["id"]] = {"file_name": f"{work}/shapes/{split}/{image['file_name']}",
                                "image_id": image["id"], "height": image["height"],
                                "width": image["width"], "annotations": []}
    for a in coco["annotations"]:
        x, y, w, h = a["bbox"]
        records[a["image_id"]]["annotations"].append({
            "bbox": [x, y, x + w, y + h], "bbox_mode": BoxMode.XYXY_ABS,
            "category_id": contiguous[a["category_id"]], "segmentation": a["segmentation"],
            "iscrowd": a.get("iscrowd", 0)})
    return list(records.values()), [c["name"] for c in categories]
