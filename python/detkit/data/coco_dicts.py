"""Detectron2's dataset dicts -> a COCO instances dict. Each problem is a detkit.Error naming the
dataset, the record (its index and file) and the field."""
import os

from .. import _C
from ..structures import BoxMode


def _require(record, key, where):
    if key not in record:
        raise _C.Error(f"{where}: no '{key}'")
    return record[key]


def _xywh(annotation, where):
    box = [float(v) for v in _require(annotation, "bbox", where)]
    if len(box) != 4:
        raise _C.Error(f"{where}: 'bbox' must have 4 numbers, got {len(box)}")
    mode = _require(annotation, "bbox_mode", where)
    if mode == BoxMode.XYWH_ABS:
        return box
    if mode == BoxMode.XYXY_ABS:
        return [box[0], box[1], box[2] - box[0], box[3] - box[1]]
    raise _C.Error(f"{where}: 'bbox_mode' {mode!r} is not supported: use BoxMode.XYXY_ABS or "
                   "BoxMode.XYWH_ABS")


def _segmentation(segmentation, where):
    if isinstance(segmentation, dict):  # RLE
        counts = segmentation.get("counts")
        if isinstance(counts, bytes):
            counts = counts.decode()
        return {"size": list(_require(segmentation, "size", where + ".segmentation")),
                "counts": counts}
    if isinstance(segmentation, list):
        return [[float(v) for v in polygon] for polygon in segmentation]
    raise _C.Error(f"{where}: 'segmentation' must be a list of polygons or an RLE dict, got "
                   f"{type(segmentation).__name__}")


def dicts_to_coco(name, dicts, metadata):
    """Returns (the COCO dict, the image root its file names are relative to). The dicts'
    category_id are contiguous (0 .. K-1, Detectron2's convention for registered
    dicts); the file's category ids are those + 1, named by metadata.thing_classes when set.
    Keypoints in the dicts are continuous coordinates (COCO's + 0.5, as Detectron2's loader makes
    them): the file gets COCO's pixel indices back."""
    if not isinstance(dicts, list):
        raise _C.Error(f"dataset '{name}': the registered function returned "
                       f"{type(dicts).__name__}, not a list of dicts")
    classes = metadata.get("thing_classes")
    images, annotations, largest = [], [], -1
    for index, record in enumerate(dicts):
        where = f"dataset '{name}': record {index}"
        if not isinstance(record, dict):
            raise _C.Error(f"{where}: a dict expected, got {type(record).__name__}")
        file_name = _require(record, "file_name", where)
        where += f" ({file_name})"
        image_id = record.get("image_id", index)
        images.append({"id": image_id, "file_name": os.path.abspath(file_name),
                       "height": int(_require(record, "height", where)),
                       "width": int(_require(record, "width", where))})
        for k, annotation in enumerate(record.get("annotations", [])):
            at = f"{where}, annotations[{k}]"
            category = int(_require(annotation, "category_id", at))
            if category < 0 or (classes is not None and category >= len(classes)):
                raise _C.Error(f"{at}: 'category_id' {category} is outside 0 .. "
                               f"{len(classes) - 1 if classes is not None else 'K-1'}")
            largest = max(largest, category)
            coco = {"id": len(annotations) + 1, "image_id": image_id, "category_id": category + 1,
                    "bbox": _xywh(annotation, at), "iscrowd": int(annotation.get("iscrowd", 0))}
            if "segmentation" in annotation:
                coco["segmentation"] = _segmentation(annotation["segmentation"], at)
            if "area" in annotation:
                coco["area"] = float(annotation["area"])
            if "keypoints" in annotation:
                points = [float(v) for v in annotation["keypoints"]]
                if len(points) % 3:
                    raise _C.Error(f"{at}: 'keypoints' must be x, y, v triples, got {len(points)} "
                                   "numbers")
                coco["keypoints"] = [v - 0.5 if i % 3 != 2 else v for i, v in enumerate(points)]
                coco["num_keypoints"] = sum(1 for v in points[2::3] if v > 0)
            annotations.append(coco)
    # COCO file names are relative to an image root: the folder all the images are under.
    root = os.path.commonpath([os.path.dirname(i["file_name"]) for i in images]) if images else "/"
    for image in images:
        image["file_name"] = os.path.relpath(image["file_name"], root)
    names = classes if classes is not None else [str(k) for k in range(largest + 1)]
    categories = [{"id": k + 1, "name": n} for k, n in enumerate(names)]
    keypoint_names = metadata.get("keypoint_names")
    if keypoint_names:
        for category in categories:
            category["keypoints"] = list(keypoint_names)
            category["skeleton"] = []
    return {"images": images, "annotations": annotations, "categories": categories}, root
