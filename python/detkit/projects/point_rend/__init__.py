"""Detectron2's PointRend project (projects/PointRend/point_rend) on detkit: add_pointrend_config,
the point sampling functions, the point heads, PointRendMaskHead / ImplicitPointRendMaskHead
(ROI_MASK_HEAD_REGISTRY), PointRendROIHeads (ROI_HEADS_REGISTRY), PointRendSemSegHead
(SEM_SEG_HEADS_REGISTRY) and ColorAugSSDTransform."""
from .color_augmentation import ColorAugSSDTransform
from .config import add_pointrend_config
from .mask_head import ImplicitPointRendMaskHead, PointRendMaskHead
from .point_head import (POINT_HEAD_REGISTRY, ImplicitPointHead, StandardPointHead,
                         build_point_head, roi_mask_point_loss)
from . import roi_heads as _roi_heads  # noqa: F401  (registers PointRendROIHeads)
from .roi_heads import PointRendROIHeads
from .semantic_seg import PointRendSemSegHead

__all__ = ["ColorAugSSDTransform", "ImplicitPointHead", "ImplicitPointRendMaskHead",
           "POINT_HEAD_REGISTRY", "PointRendMaskHead", "PointRendROIHeads", "PointRendSemSegHead",
           "StandardPointHead",
           "add_pointrend_config", "build_point_head", "roi_mask_point_loss"]
