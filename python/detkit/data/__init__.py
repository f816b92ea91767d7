"""detkit.data: Detectron2's DatasetCatalog (datasets as Python functions returning its list of
dicts), MetadataCatalog and register_coco_instances, over detkit's COCO catalog."""
from .catalog import (DatasetCatalog, MetadataCatalog, build_detection_test_loader,
                      register_coco_instances)

__all__ = ["DatasetCatalog", "MetadataCatalog", "build_detection_test_loader",
           "register_coco_instances"]
