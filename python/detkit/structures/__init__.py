"""detkit.structures: Detectron2's structures (detectron2.structures) with its names."""
from .boxes import (Boxes, matched_pairwise_iou, pairwise_intersection, pairwise_ioa,
                    pairwise_iou, pairwise_point_box_distance)
from .boxes_mode import BoxMode
from .image_list import ImageList
from .instances import Instances
from .keypoints import Keypoints, heatmaps_to_keypoints
from .masks import BitMasks, PolygonMasks, ROIMasks, polygons_to_bitmask
from .rotated_boxes import RotatedBoxes

__all__ = ["BitMasks", "Boxes", "BoxMode", "ImageList", "Instances", "Keypoints", "PolygonMasks", "ROIMasks",
           "RotatedBoxes",
           "heatmaps_to_keypoints", "polygons_to_bitmask", "matched_pairwise_iou",
           "pairwise_intersection", "pairwise_ioa", "pairwise_iou", "pairwise_point_box_distance"]
