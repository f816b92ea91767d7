"""detkit.data.datasets: Detectron2's dataset registration functions, over detkit's catalog;
coco: load_coco_json, convert_to_coco_dict, convert_to_coco_json."""
from ..catalog import (register_coco_instances, register_coco_panoptic,
                       register_coco_panoptic_separated, register_lvis_instances,
                       register_pascal_voc)
from . import coco

__all__ = ["coco", "register_coco_instances", "register_coco_panoptic",
           "register_coco_panoptic_separated", "register_lvis_instances", "register_pascal_voc"]
