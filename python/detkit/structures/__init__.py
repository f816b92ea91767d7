"""detkit.structures: Detectron2's structures (detectron2.structures) with its names."""
from .boxes import (Boxes, matched_pairwise_iou, pairwise_intersection, pairwise_ioa,
                    pairwise_iou, pairwise_point_box_distance)
from .boxes_mode import BoxMode
from .image_list import ImageList
from .instances import Instances

__all__ = ["Boxes", "BoxMode", "ImageList", "Instances", "matched_pairwise_iou",
           "pairwise_intersection", "pairwise_ioa", "pairwise_iou", "pairwise_point_box_distance"]
