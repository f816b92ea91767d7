"""Detectron2's detectron2.data.datasets.coco, without pycocotools: a COCO instances JSON read
with the json module into Detectron2's dataset dicts, and a registered dataset's dicts written
back as a COCO dict / file."""
import datetime
import json
import logging
import os
import shutil

import numpy as np

from ...structures import Boxes, BoxMode, PolygonMasks
from ..catalog import DatasetCatalog, MetadataCatalog
from ... import _C

__all__ = ["load_coco_json", "convert_to_coco_dict", "convert_to_coco_json"]

logger = logging.getLogger(__name__)


def _read_coco(json_file):
    with open(os.fspath(json_file)) as f:
        coco = json.load(f)
    if not isinstance(coco, dict):
        raise ValueError(f"{json_file}: a COCO file is a JSON object, got {type(coco).__name__}")
    images = {}
    for k, image in enumerate(coco.get("images", [])):
        for key in ("id", "file_name", "height", "width"):
            if key not in image:
                raise KeyError(f"{json_file}: images[{k}] has no '{key}'")
        images[image["id"]] = image
    annotations_of = {image_id: [] for image_id in images}
    annotations = coco.get("annotations", [])
    for k, annotation in enumerate(annotations):
        if "image_id" not in annotation:
            raise KeyError(f"{json_file}: annotations[{k}] has no 'image_id'")
        if annotation["image_id"] in annotations_of:
            annotations_of[annotation["image_id"]].append(annotation)
    return coco, images, annotations_of, len(annotations)


def _category_map(coco, json_file, dataset_name):
    """Sets thing_classes and thing_dataset_id_to_contiguous_id on dataset_name's metadata;
    returns the id map (the file's category ids, sorted, -> 0 .. K-1)."""
    categories = sorted(coco.get("categories", []), key=lambda c: c["id"])
    if not categories:
        raise ValueError(f"{json_file}: no 'categories' to name the classes of '{dataset_name}'")
    ids = [c["id"] for c in categories]
    meta = MetadataCatalog.get(dataset_name)
    meta.thing_classes = [c["name"] for c in categories]
    if not (min(ids) == 1 and max(ids) == len(ids)) and "coco" not in dataset_name:
        logger.warning("Category ids in annotations are not in [1, #categories]! "
                       "We'll apply a mapping for you.")
    id_map = {v: i for i, v in enumerate(ids)}
    meta.thing_dataset_id_to_contiguous_id = id_map
    return id_map


def _segmentation(segm):
    """The annotation's segmentation as Detectron2 keeps it: an RLE with compressed counts, or
    the polygons of 6 or more (an even number of) coordinates; None when no polygon is left."""
    if isinstance(segm, dict):
        if isinstance(segm.get("counts"), list):
            height, width = (int(v) for v in segm["size"])
            return {"size": list(segm["size"]),
                    "counts": _C.rle_compress(segm["counts"], height, width)}
        return segm
    polygons = [p for p in segm if len(p) % 2 == 0 and len(p) >= 6]
    return polygons or None


def _record_annotation(anno, image_id, keys, id_map, json_file):
    """One annotation as Detectron2's dict, or None when its polygons are all invalid."""
    if anno.get("ignore", 0) != 0:
        raise ValueError(f"{json_file}: annotation {anno.get('id')} has 'ignore', which COCO "
                         "files read by Detectron2 do not support")
    obj = {key: anno[key] for key in keys if key in anno}
    if "bbox" in obj and len(obj["bbox"]) == 0:
        raise ValueError(f"One annotation of image {image_id} contains empty 'bbox' value! "
                         "This json does not have valid COCO format.")
    if anno.get("segmentation"):
        segm = _segmentation(anno["segmentation"])
        if segm is None:
            return None
        obj["segmentation"] = segm
    if anno.get("keypoints"):  # COCO's pixel indices -> continuous coordinates
        obj["keypoints"] = [v + 0.5 if i % 3 != 2 else v for i, v in enumerate(anno["keypoints"])]
    obj["bbox_mode"] = BoxMode.XYWH_ABS
    if id_map:
        if obj["category_id"] not in id_map:
            raise KeyError(f"Encountered category_id={obj['category_id']} but this id does not "
                           "exist in 'categories' of the json file.")
        obj["category_id"] = id_map[obj["category_id"]]
    return obj


def load_coco_json(json_file, image_root, dataset_name=None, extra_annotation_keys=None):
    """A COCO instances file -> Detectron2's list of dicts (file_name under image_root, height,
    width, image_id, annotations with bbox in XYWH_ABS, category_id, iscrowd, segmentation,
    keypoints and extra_annotation_keys), images in increasing id. With dataset_name, category
    ids become 0 .. K-1 and the dataset's metadata gets thing_classes and
    thing_dataset_id_to_contiguous_id. Images are not read."""
    coco, images, annotations_of, total = _read_coco(json_file)
    id_map = _category_map(coco, json_file, dataset_name) if dataset_name is not None else None
    image_ids = sorted(images)
    matched = sum(len(annotations_of[i]) for i in image_ids)
    if matched < total:
        logger.warning(f"{json_file} contains {total} annotations, but only {matched} of them "
                       "match to images in the file.")
    if "minival" not in os.fspath(json_file):
        seen = set()
        for image_id in image_ids:
            for anno in annotations_of[image_id]:
                if anno.get("id") in seen:
                    raise ValueError(f"Annotation ids in '{json_file}' are not unique! "
                                     f"(id {anno.get('id')} repeats)")
                seen.add(anno.get("id"))
    keys = ["iscrowd", "bbox", "keypoints", "category_id"] + list(extra_annotation_keys or [])
    dicts, dropped = [], 0
    for image_id in image_ids:
        image = images[image_id]
        objs = []
        for anno in annotations_of[image_id]:
            obj = _record_annotation(anno, image_id, keys, id_map, json_file)
            if obj is None:
                dropped += 1
            else:
                objs.append(obj)
        dicts.append({"file_name": os.path.join(image_root, image["file_name"]),
                      "height": image["height"], "width": image["width"], "image_id": image_id,
                      "annotations": objs})
    if dropped:
        logger.warning(f"Filtered out {dropped} instances without valid segmentation.")
    return dicts


def _area(annotation, bbox_xywh):
    segm = annotation.get("segmentation")
    if segm is None:
        if len(bbox_xywh) == 5:  # rotated: width x height
            return float(bbox_xywh[2] * bbox_xywh[3])
        xyxy = BoxMode.convert(list(bbox_xywh), BoxMode.XYWH_ABS, BoxMode.XYXY_ABS)
        return float(Boxes([xyxy]).area()[0].item())
    if isinstance(segm, list):
        return float(PolygonMasks([segm]).area()[0].item())
    if isinstance(segm, dict):
        height, width = (int(v) for v in segm["size"])
        return float(_C.rle_area(segm["counts"], height, width))
    raise TypeError(f"Unknown segmentation type {type(segm)}!")


def _coco_annotation(annotation, image_id, ann_id, to_file_id):
    bbox = annotation["bbox"]
    if isinstance(bbox, np.ndarray):
        if bbox.ndim != 1:
            raise ValueError(f"bbox has to be 1-dimensional. Got shape={bbox.shape}.")
        bbox = bbox.tolist()
    if len(bbox) not in (4, 5):
        raise ValueError(f"bbox has to has length 4 or 5. Got {bbox}.")
    to_mode = BoxMode.XYWH_ABS if len(bbox) == 4 else BoxMode.XYWHA_ABS
    bbox = BoxMode.convert(list(bbox), annotation["bbox_mode"], to_mode)
    out = {"id": ann_id, "image_id": image_id, "bbox": [round(float(v), 3) for v in bbox],
           "area": _area(annotation, bbox), "iscrowd": int(annotation.get("iscrowd", 0)),
           "category_id": int(to_file_id(annotation["category_id"]))}
    if "keypoints" in annotation:
        points = [v - 0.5 if i % 3 != 2 else v for i, v in enumerate(annotation["keypoints"])]
        out["keypoints"] = points
        out["num_keypoints"] = annotation.get("num_keypoints",
                                              sum(v > 0 for v in points[2::3]))
    if "segmentation" in annotation:
        segm = annotation["segmentation"]
        if isinstance(segm, dict) and not isinstance(segm["counts"], (str, list)):
            segm = dict(segm, counts=segm["counts"].decode("ascii"))
        out["segmentation"] = segm
    return out


def convert_to_coco_dict(dataset_name):
    """A registered dataset (Detectron2's dicts, metadata with thing_classes) -> a COCO dict:
    bboxes in XYWH (XYWHA for rotated ones), areas of the segmentation (polygons or RLE) or of
    the box, keypoints back to COCO's pixel indices, category ids mapped back through
    thing_dataset_id_to_contiguous_id when the metadata has it."""
    dicts = DatasetCatalog.get(dataset_name)
    metadata = MetadataCatalog.get(dataset_name)
    classes = metadata.get("thing_classes")
    if classes is None:
        raise AttributeError(f"convert_to_coco_dict: the metadata of '{dataset_name}' has no "
                             "thing_classes")
    forward = metadata.get("thing_dataset_id_to_contiguous_id")
    backward = {v: k for k, v in forward.items()} if forward else None

    def to_file_id(contiguous):
        return backward[contiguous] if backward is not None else contiguous

    categories = [{"id": to_file_id(k), "name": n} for k, n in enumerate(classes)]
    images, annotations = [], []
    for index, record in enumerate(dicts):
        image = {"id": record.get("image_id", index), "width": int(record["width"]),
                 "height": int(record["height"]), "file_name": str(record["file_name"])}
        images.append(image)
        for annotation in record.get("annotations", []):
            annotations.append(_coco_annotation(annotation, image["id"], len(annotations) + 1,
                                                to_file_id))
    logger.info(f"Conversion finished, #images: {len(images)}, #annotations: {len(annotations)}")
    coco = {"info": {"date_created": str(datetime.datetime.now()),
                     "description": "Automatically generated COCO json file for detkit."},
            "images": images, "categories": categories, "licenses": None}
    if annotations:
        coco["annotations"] = annotations
    return coco


def convert_to_coco_json(dataset_name, output_file, allow_cached=True):
    """Writes convert_to_coco_dict(dataset_name) to output_file (through a temporary file, then
    moved); an existing output_file is kept as it is when allow_cached."""
    folder = os.path.dirname(output_file)
    if folder:
        os.makedirs(folder, exist_ok=True)
    if allow_cached and os.path.exists(output_file):
        logger.warning(f"Using previously cached COCO format annotations at '{output_file}'. "
                       "You need to clear the cache file if your dataset has been modified.")
        return
    coco = convert_to_coco_dict(dataset_name)
    temporary = output_file + ".tmp"
    with open(temporary, "w") as f:
        json.dump(coco, f)
    shutil.move(temporary, output_file)
