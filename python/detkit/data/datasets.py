"""detkit.data.datasets: Detectron2's dataset registration functions, over detkit's catalog."""
from .catalog import (register_coco_instances, register_coco_panoptic,
                      register_coco_panoptic_separated, register_lvis_instances,
                      register_pascal_voc)

__all__ = ["register_coco_instances", "register_coco_panoptic", "register_coco_panoptic_separated",
           "register_lvis_instances", "register_pascal_voc"]
