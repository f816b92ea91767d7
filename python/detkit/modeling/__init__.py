"""detkit.modeling from Python: Detectron2's detectron2.modeling names (matcher, box_regression,
anchor_generator, poolers, meta_arch). build_model gives detkit's C++ models as nn.Modules."""
from .box_regression import Box2BoxTransform, Box2BoxTransformLinear, Box2BoxTransformRotated
from .matcher import Matcher
from .postprocessing import detector_postprocess, sem_seg_postprocess
from .roi_heads import (ROI_BOX_HEAD_REGISTRY, ROI_HEADS_REGISTRY, ROI_KEYPOINT_HEAD_REGISTRY,
                        ROI_MASK_HEAD_REGISTRY, BaseKeypointRCNNHead, BaseMaskRCNNHead,
                        FastRCNNOutputLayers, ROIHeads, StandardROIHeads, build_box_head,
                        build_keypoint_head, build_mask_head, build_roi_heads)
from .meta_arch import (META_ARCH_REGISTRY, GeneralizedRCNN, PanopticFPN, ProposalNetwork,
                        RetinaNet, SemanticSegmentor, build_model)

__all__ = ["Box2BoxTransform", "Box2BoxTransformLinear", "Box2BoxTransformRotated", "Matcher",
           "GeneralizedRCNN", "META_ARCH_REGISTRY", "PanopticFPN", "ProposalNetwork", "RetinaNet",
           "SemanticSegmentor", "build_model"]
__all__ += ["BaseKeypointRCNNHead", "BaseMaskRCNNHead", "FastRCNNOutputLayers",
            "ROI_BOX_HEAD_REGISTRY", "ROI_HEADS_REGISTRY", "ROI_KEYPOINT_HEAD_REGISTRY",
            "ROI_MASK_HEAD_REGISTRY", "ROIHeads", "StandardROIHeads", "build_box_head",
            "build_keypoint_head", "build_mask_head", "build_roi_heads", "detector_postprocess",
            "sem_seg_postprocess"]
