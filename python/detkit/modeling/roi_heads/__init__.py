"""Detectron2's ROI heads (detectron2.modeling.roi_heads): the box, mask and keypoint heads and
the ROIHeads that run them on the proposals, built by name from a config."""
from .box_head import ROI_BOX_HEAD_REGISTRY, FastRCNNConvFCHead, build_box_head
from .keypoint_head import (ROI_KEYPOINT_HEAD_REGISTRY, BaseKeypointRCNNHead,
                            KRCNNConvDeconvUpsampleHead, build_keypoint_head)
from .mask_head import (ROI_MASK_HEAD_REGISTRY, BaseMaskRCNNHead, MaskRCNNConvUpsampleHead,
                        build_mask_head)
from .roi_heads import (ROI_HEADS_REGISTRY, ROIHeads, Res5ROIHeads, StandardROIHeads,
                        build_roi_heads, select_foreground_proposals,
                        select_proposals_with_visible_keypoints)
from .cascade_rcnn import CascadeROIHeads
from .fast_rcnn import FastRCNNOutputLayers
from .rotated_fast_rcnn import RotatedFastRCNNOutputLayers

__all__ = ["BaseKeypointRCNNHead", "BaseMaskRCNNHead", "CascadeROIHeads", "FastRCNNConvFCHead",
           "FastRCNNOutputLayers", "KRCNNConvDeconvUpsampleHead", "MaskRCNNConvUpsampleHead",
           "ROIHeads", "ROI_BOX_HEAD_REGISTRY", "ROI_HEADS_REGISTRY",
           "ROI_KEYPOINT_HEAD_REGISTRY", "ROI_MASK_HEAD_REGISTRY", "Res5ROIHeads",
           "RotatedFastRCNNOutputLayers", "StandardROIHeads", "build_box_head",
           "build_keypoint_head", "build_mask_head", "build_roi_heads",
           "select_foreground_proposals", "select_proposals_with_visible_keypoints"]
