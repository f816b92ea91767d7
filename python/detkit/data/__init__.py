"""detkit.data: Detectron2's DatasetCatalog (datasets as Python functions returning its list of
dicts), MetadataCatalog and the register_* functions of detkit.data.datasets (COCO instances, LVIS,
Pascal VOC, COCO panoptic), over detkit's catalog."""
from . import datasets, detection_utils, transforms
from .catalog import (DatasetCatalog, MetadataCatalog, build_detection_test_loader,
                      register_coco_instances)

__all__ = ["DatasetCatalog", "MetadataCatalog", "build_detection_test_loader", "datasets", "detection_utils",
           "register_coco_instances", "transforms"]
