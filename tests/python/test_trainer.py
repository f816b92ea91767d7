#!/usr/bin/env python3
"""Detectron2's tutorial flow from Python, the import renamed: a dataset registered as a Python
function returning Detectron2's dicts (built here from a shapes COCO file), thing_classes in the
metadata, a config from the quick demo's file, DefaultTrainer (300 iterations), then
DefaultPredictor on the trained weights, Visualizer on its output, COCOEvaluator +
inference_on_dataset. The same config and seed through `detkit train` on the COCO file itself must give
the same training: the same losses at every logged iteration and the same AP. Then bad dicts, each
a detkit.Error naming the record and field.
Usage: test_trainer.py SHARED SOURCE DETKIT"""
import json
import os
import subprocess
import sys

import numpy as np
from PIL import Image

import detkit
from detkit.config import get_cfg
from detkit.data import DatasetCatalog, MetadataCatalog, build_detection_test_loader
from detkit.engine import DefaultPredictor, DefaultTrainer
from detkit.evaluation import COCOEvaluator, inference_on_dataset
from detkit.structures import BoxMode
from detkit.utils.visualizer import Visualizer
from small_shapes import shapes_dicts as small_shapes_dicts
from small_shapes import small_shapes

shared, source, detkit_binary = sys.argv[1:4]
work = small_shapes(detkit_binary, "python_trainer", train=8, val=4, seed=3)


def shapes_dicts(split):
    return small_shapes_dicts(work, split)


calls = []
for split in ("train", "val"):
    dicts, names = shapes_dicts(split)
    DatasetCatalog.register(f"py_shapes_{split}", lambda d=dicts: calls.append(1) or d)
    MetadataCatalog.get(f"py_shapes_{split}").set(thing_classes=names)

overrides = ["SOLVER.MAX_ITER", "300", "SOLVER.IMS_PER_BATCH", "2", "INPUT.MIN_SIZE_TRAIN", "(64,)",
             "INPUT.MAX_SIZE_TRAIN", "96", "INPUT.MIN_SIZE_TEST", "64", "INPUT.MAX_SIZE_TEST", "96",
             "DATALOADER.NUM_WORKERS", "1", "SEED", "7", "SOLVER.CHECKPOINT_PERIOD", "100"]
config_file = f"{source}/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml"
cfg = get_cfg()
cfg.merge_from_file(config_file)
cfg.merge_from_list(overrides)
cfg.DATASETS.TRAIN = ("py_shapes_train",)
cfg.DATASETS.TEST = ("py_shapes_val",)
cfg.MODEL.ROI_HEADS.NUM_CLASSES = len(MetadataCatalog.get("py_shapes_train").thing_classes)
cfg.OUTPUT_DIR = f"{work}/python_run"
trainer = DefaultTrainer(cfg)
trainer.resume_or_load(resume=False)
trainer.train()
assert len(calls) == 2, f"each dataset function is called once, got {len(calls)} calls"

register = ";".join(f"file_shapes_{s}={work}/shapes/annotations/instances_{s}.json:{work}/shapes/{s}"
                    for s in ("train", "val"))
subprocess.run([detkit_binary, "train", "--config-file", config_file, *overrides,
                "DATASETS.TRAIN", "('file_shapes_train',)", "DATASETS.TEST", "('file_shapes_val',)",
                "MODEL.ROI_HEADS.NUM_CLASSES", str(cfg.MODEL.ROI_HEADS.NUM_CLASSES),
                "OUTPUT_DIR", f"{work}/cli_run"], check=True, capture_output=True,
               env=dict(os.environ, DETKIT_DATASETS_REGISTER=register))


def metrics(run):
    return [json.loads(line) for line in open(f"{work}/{run}/metrics.json")]


ours, cli = metrics("python_run"), metrics("cli_run")
assert [m.get("iteration") for m in ours] == [m.get("iteration") for m in cli]
worst = 0.0
for a, b in zip(ours, cli):
    for key, value in b.items():
        if key.startswith("loss") or key.startswith("bbox/") or key.startswith("segm/"):
            worst = max(worst, abs(a[key] - value) / max(abs(value), 1e-3))
print(f"Python-registered dicts vs the COCO file through `detkit train`: {len(ours)} metrics.json "
      f"lines, largest relative difference in a loss or AP {worst:.3g}")
print("losses at the last logged iteration:",
      {k: round(v, 5) for k, v in ours[-2 if 'bbox/AP' in ours[-1] else -1].items() if k.startswith("loss")})
print("AP:", {k: v for k, v in ours[-1].items() if k in ("bbox/AP", "segm/AP")})
# The CLI and Python run the same torch, one thread each (DETKIT_NUM_THREADS=1,
# tests/python/CMakeLists.txt): the same kernels; held to 1e-3.
assert worst < 1e-3, "the Python-registered dataset trained differently from its COCO file"

# DefaultPredictor on the trained weights, on a validation image.
cfg.MODEL.WEIGHTS = f"{work}/python_run/model_final.pth"
image = np.ascontiguousarray(np.asarray(Image.open(shapes_dicts("val")[0][0]["file_name"])
                                        .convert("RGB"))[:, :, ::-1])
instances = DefaultPredictor(cfg)(image)["instances"]
print(f"predicted {len(instances)} instances on a val image, fields {sorted(instances.get_fields())}")
drawn = Visualizer(image[:, :, ::-1], MetadataCatalog.get("py_shapes_val"), scale=2.0) \
    .draw_instance_predictions(instances.to("cpu")).get_image()
assert drawn.shape == (2 * image.shape[0], 2 * image.shape[1], 3) and drawn.dtype == np.uint8

# COCOEvaluator + inference_on_dataset on the predictor's model: the training's own final
# evaluation (the same weights), as Detectron2's OrderedDict.
predictor = DefaultPredictor(cfg)
evaluator = COCOEvaluator("py_shapes_val", output_dir=f"{work}/python_eval")
results = inference_on_dataset(predictor.model, build_detection_test_loader(cfg, "py_shapes_val"),
                               evaluator)
print("inference_on_dataset:", {task: round(m["AP"], 3) for task, m in results.items()})
assert list(results) == ["bbox", "segm"], list(results)
for task in results:
    assert abs(results[task]["AP"] - ours[-1][f"{task}/AP"]) < 1e-9, (task, results[task]["AP"])
assert os.path.exists(f"{work}/python_eval/coco_instances_results.json")
assert results["bbox"]["AP"] > 0, "300 iterations of the demo learned nothing"

# Bad dicts: each named.
good, good_names = shapes_dicts("train")
cases = [
    (lambda d: d[0]["annotations"][0].pop("bbox"), "record 0 (", "annotations[0]: no 'bbox'"),
    (lambda d: d[1]["annotations"][0].update(bbox_mode=BoxMode.XYWHA_ABS), "record 1 (",
     "annotations[0]: 'bbox_mode' <BoxMode.XYWHA_ABS: 4> is not supported"),
    (lambda d: d[2].pop("height"), "record 2 (", "no 'height'"),
    (lambda d: d[0]["annotations"][0].update(category_id=99), "record 0 (",
     "'category_id' 99 is outside 0 .. 2"),
]
for k, (spoil, where, what) in enumerate(cases):
    dicts = json.loads(json.dumps(good))
    spoil(dicts)
    DatasetCatalog.register(f"bad_{k}", lambda d=dicts: d)
    MetadataCatalog.get(f"bad_{k}").set(thing_classes=good_names)
    cfg = get_cfg()
    cfg.merge_from_file(config_file)
    cfg.merge_from_list(overrides)
    cfg.DATASETS.TRAIN = (f"bad_{k}",)
    cfg.DATASETS.TEST = ()
    cfg.OUTPUT_DIR = f"{work}/bad_{k}"
    try:
        DefaultTrainer(cfg)
        raise AssertionError(f"no error for {what}")
    except detkit.Error as e:
        print(f"bad dicts: {e}")
        assert f"dataset 'bad_{k}': {where}" in str(e) and what in str(e), str(e)
try:
    DatasetCatalog.register("py_shapes_train", lambda: [])
    raise AssertionError("a second registration of one name was accepted")
except detkit.Error as e:
    print(f"twice: {e}")
print("DefaultTrainer and DatasetCatalog from Python: all checks passed")
