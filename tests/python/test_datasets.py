#!/usr/bin/env python3
"""detkit.data.datasets: Detectron2's register_pascal_voc, register_lvis_instances,
register_coco_panoptic and register_coco_panoptic_separated from Python, the import renamed. A VOC
folder (the fixture's XML files, coco_tiny's JPEGs) registered from Python trains one step and is
scored by the VOC evaluator; the tiny LVIS file registered from Python is scored by the LVIS
evaluator; each call sets Detectron2's metadata; a taken name and other VOC class names are
detkit.Errors.
Usage: test_datasets.py SHARED SOURCE DETKIT"""
import json
import os
import re
import sys
import tempfile

import detkit
from detkit.config import get_cfg
from detkit.data import MetadataCatalog
from detkit.data.datasets import (register_coco_panoptic, register_coco_panoptic_separated,
                                  register_lvis_instances, register_pascal_voc)
from detkit.engine import DefaultTrainer

shared, source = sys.argv[1:3]
voc_fixture = f"{shared}/fixtures/voc_eval/VOC2007"
lvis_json = f"{shared}/fixtures/lvis_eval/lvis_v1_val_tiny.json"
coco_tiny = f"{shared}/data/coco_tiny"
for needed in (voc_fixture, lvis_json, f"{coco_tiny}/val2017"):
    if not os.path.exists(needed):
        print(f"skipped: {needed} is absent")
        sys.exit(77)
work = tempfile.mkdtemp(prefix="detkit_py_datasets_")

# A VOC folder of 4 images with objects: the fixture's XML, coco_tiny's JPEGs.
voc = f"{work}/VOC2007"
os.makedirs(f"{voc}/ImageSets/Main")
os.makedirs(f"{voc}/JPEGImages")
os.symlink(f"{voc_fixture}/Annotations", f"{voc}/Annotations")
stems = []
for stem in open(f"{voc_fixture}/ImageSets/Main/test.txt").read().split():
    xml = open(f"{voc_fixture}/Annotations/{stem}.xml").read()
    if "<object>" in xml and len(stems) < 4:
        jpeg = re.search(r"<filename>(.*?)</filename>", xml).group(1)
        os.symlink(f"{coco_tiny}/val2017/{jpeg}", f"{voc}/JPEGImages/{stem}.jpg")
        stems.append(stem)
open(f"{voc}/ImageSets/Main/mini.txt", "w").write("\n".join(stems) + "\n")

register_pascal_voc("py_voc_mini", voc, "mini", 2007)
meta = MetadataCatalog.get("py_voc_mini")
assert len(meta.thing_classes) == 20 and meta.thing_classes[0] == "aeroplane", meta.thing_classes
assert (meta.dirname, meta.split, meta.year) == (voc, "mini", 2007), meta.as_dict()


def expect_error(call, part):
    try:
        call()
    except detkit.Error as e:
        assert part in str(e), str(e)
        print(f"named: {e}")
        return
    raise AssertionError(f"no detkit.Error with {part!r}")


expect_error(lambda: register_pascal_voc("py_voc_mini", voc, "mini", 2007),
             "Dataset 'py_voc_mini' is already registered!")
expect_error(lambda: register_pascal_voc("py_voc_cats", voc, "mini", 2007, class_names=["cat"]),
             "are not Detectron2's 20 VOC classes")
expect_error(lambda: register_lvis_instances("coco_2017_val", {}, lvis_json, f"{coco_tiny}/"),
             "Dataset 'coco_2017_val' is already registered!")


def train_one_step(name, num_classes, out, *extra):
    cfg = get_cfg()
    cfg.merge_from_file(f"{source}/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml")
    cfg.merge_from_list(["SOLVER.MAX_ITER", "1", "SOLVER.IMS_PER_BATCH", "2",
                         "INPUT.MIN_SIZE_TRAIN", "(64,)", "INPUT.MAX_SIZE_TRAIN", "96",
                         "INPUT.MIN_SIZE_TEST", "64", "INPUT.MAX_SIZE_TEST", "96",
                         "DATALOADER.NUM_WORKERS", "1", "SOLVER.BASE_LR", "1e-6",
                         # after one step every detection is kept, so there are some to score
                         "MODEL.ROI_HEADS.SCORE_THRESH_TEST", "0.0", "TEST.DETECTIONS_PER_IMAGE", "10",
                         *extra])
    cfg.DATASETS.TRAIN = (name,)
    cfg.DATASETS.TEST = (name,)
    cfg.MODEL.ROI_HEADS.NUM_CLASSES = num_classes
    cfg.OUTPUT_DIR = out
    trainer = DefaultTrainer(cfg)
    trainer.resume_or_load(resume=False)
    trainer.train()
    return [json.loads(line) for line in open(f"{out}/metrics.json")][-1]


last = train_one_step("py_voc_mini", 20, f"{work}/voc_run", "MODEL.MASK_ON", "False")
assert all(isinstance(last.get(k), float) for k in ("bbox/AP", "bbox/AP50", "bbox/AP75")), last
assert os.path.isdir(f"{work}/voc_run/inference/pascal_voc_results") or any(
    "pascal_voc" in f for _, _, fs in os.walk(f"{work}/voc_run") for f in fs), "no VOC results"
print("register_pascal_voc: trained a step and scored by the VOC evaluator:",
      {k: round(v, 3) for k, v in last.items() if k.startswith("bbox/")})

# The tiny LVIS file's first 8 images, all its categories.
lvis = json.load(open(lvis_json))
lvis["images"] = lvis["images"][:8]
kept = {image["id"] for image in lvis["images"]}
lvis["annotations"] = [a for a in lvis["annotations"] if a["image_id"] in kept]
lvis8 = f"{work}/lvis_tiny8.json"
json.dump(lvis, open(lvis8, "w"))
register_lvis_instances("py_lvis_tiny8", {}, lvis8, f"{coco_tiny}/")
meta = MetadataCatalog.get("py_lvis_tiny8")
assert meta.evaluator_type == "lvis" and meta.json_file == lvis8, meta.as_dict()
categories = len(lvis["categories"])
last = train_one_step("py_lvis_tiny8", categories, f"{work}/lvis_run")
assert os.path.exists(f"{work}/lvis_run/inference/lvis_instances_results.json"), os.listdir(
    f"{work}/lvis_run/inference")
assert all(isinstance(last.get(k), float) for k in ("bbox/AP", "bbox/APr", "segm/AP")), last
print("register_lvis_instances: trained a step and scored by the LVIS evaluator:",
      {k: round(v, 3) for k, v in last.items() if k in ("bbox/AP", "bbox/APr", "segm/AP")})

# The panoptic registrations: Detectron2's names and metadata (their data paths are only read
# when a trainer loads them; tests/data checks the loading).
register_coco_panoptic("py_pan", {"thing_classes": ["a"]}, f"{work}/img", f"{work}/pan",
                       f"{work}/pan.json")
meta = MetadataCatalog.get("py_pan")
assert (meta.evaluator_type, meta.ignore_label, meta.label_divisor, meta.json_file) == (
    "coco_panoptic_seg", 255, 1000, None), meta.as_dict()
register_coco_panoptic_separated("py_pan2", {}, f"{work}/img", f"{work}/pan", f"{work}/pan.json",
                                 f"{work}/sem", f"{work}/inst.json")
assert MetadataCatalog.get("py_pan2_separated").evaluator_type == "coco_panoptic_seg"
assert MetadataCatalog.get("py_pan2_stuffonly").evaluator_type == "sem_seg"
registered = set(detkit._C.registered_datasets())
assert {"py_pan", "py_pan2_separated", "py_pan2_stuffonly"} <= registered
expect_error(lambda: register_coco_panoptic_separated("py_pan2", {}, "i", "p", "p.json", "s",
                                                      "i.json"),
             "Dataset 'py_pan2_separated' is already registered!")
# Built-in names come with their metadata, as Detectron2's MetadataCatalog gives them (the
# tutorial's Visualizer(..., MetadataCatalog.get(cfg.DATASETS.TRAIN[0])) labels with them).
coco = MetadataCatalog.get("coco_2017_val")
assert len(coco.thing_classes) == 80 and coco.thing_classes[3] == "motorcycle", coco.thing_classes
assert coco.thing_dataset_id_to_contiguous_id[4] == 3 and coco.evaluator_type == "coco"
people = MetadataCatalog.get("keypoints_coco_2017_val")
assert len(people.keypoint_names) == 17 and people.keypoint_names[1] == "left_eye"
assert ("left_eye", "right_eye") in people.keypoint_flip_map, people.keypoint_flip_map
separated = MetadataCatalog.get("coco_2017_val_panoptic_separated")
assert separated.stuff_classes[0] == "things" and len(separated.stuff_classes) == 54
assert separated.ignore_label == 255 and separated.evaluator_type == "coco_panoptic_seg"
assert MetadataCatalog.get("voc_2007_test").thing_classes[0] == "aeroplane"
assert MetadataCatalog.get("not_a_dataset").as_dict() == {"name": "not_a_dataset"}
print("built-in metadata: coco_2017_val's 80 things, keypoints_coco_2017_val's 17 keypoints, "
      f"{len(separated.stuff_classes)} stuff classes of coco_2017_val_panoptic_separated")
print("detkit.data.datasets from Python: all checks passed")
