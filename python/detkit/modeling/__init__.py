"""detkit.modeling from Python: Detectron2's detectron2.modeling names (matcher, box_regression,
anchor_generator, poolers, sampling, backbone, proposal_generator, roi_heads, postprocessing,
meta_arch). The parts are Python modules on detkit's ops, as Detectron2's, for code that builds
and scripts them; build_model gives detkit's C++ models as nn.Modules."""
from .backbone import (BACKBONE_REGISTRY, FPN, Backbone, ResNet, ResNetBlockBase,
                       build_backbone, build_resnet_backbone, make_stage)
from .box_regression import Box2BoxTransform, Box2BoxTransformLinear, Box2BoxTransformRotated
from .matcher import Matcher
from .postprocessing import detector_postprocess, sem_seg_postprocess
from .roi_heads import (ROI_BOX_HEAD_REGISTRY, ROI_HEADS_REGISTRY, ROI_KEYPOINT_HEAD_REGISTRY,
                        ROI_MASK_HEAD_REGISTRY, BaseKeypointRCNNHead, BaseMaskRCNNHead,
                        FastRCNNOutputLayers, ROIHeads, StandardROIHeads, build_box_head,
                        build_keypoint_head, build_mask_head, build_roi_heads)
from .meta_arch import (META_ARCH_REGISTRY, GeneralizedRCNN, PanopticFPN, ProposalNetwork,
                        RetinaNet, SemanticSegmentor, build_model)
from .meta_arch import SEM_SEG_HEADS_REGISTRY, build_sem_seg_head
from .proposal_generator import (PROPOSAL_GENERATOR_REGISTRY, RPN_HEAD_REGISTRY,
                                 build_proposal_generator, build_rpn_head)

__all__ = ["Box2BoxTransform", "Box2BoxTransformLinear", "Box2BoxTransformRotated", "Matcher",
           "GeneralizedRCNN", "META_ARCH_REGISTRY", "PanopticFPN", "ProposalNetwork", "RetinaNet",
           "SemanticSegmentor", "build_model"]
__all__ += ["BACKBONE_REGISTRY", "Backbone", "FPN", "ResNet", "ResNetBlockBase", "build_backbone",
            "build_resnet_backbone", "make_stage"]
__all__ += ["PROPOSAL_GENERATOR_REGISTRY", "RPN_HEAD_REGISTRY", "build_proposal_generator",
            "build_rpn_head"]
__all__ += ["BaseKeypointRCNNHead", "BaseMaskRCNNHead", "FastRCNNOutputLayers",
            "ROI_BOX_HEAD_REGISTRY", "ROI_HEADS_REGISTRY", "ROI_KEYPOINT_HEAD_REGISTRY",
            "ROI_MASK_HEAD_REGISTRY", "ROIHeads", "StandardROIHeads", "build_box_head",
            "build_keypoint_head", "build_mask_head", "build_roi_heads", "detector_postprocess",
            "sem_seg_postprocess"]
__all__ += ["SEM_SEG_HEADS_REGISTRY", "build_sem_seg_head"]
