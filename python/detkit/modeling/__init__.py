"""detkit.modeling from Python: Detectron2's detectron2.modeling names (matcher, box_regression,
anchor_generator, poolers, meta_arch). build_model gives detkit's C++ models as nn.Modules."""
from .backbone import (BACKBONE_REGISTRY, FPN, Backbone, ResNet, ResNetBlockBase,
                       build_backbone, build_resnet_backbone, make_stage)
from .box_regression import Box2BoxTransform, Box2BoxTransformLinear, Box2BoxTransformRotated
from .matcher import Matcher
from .meta_arch import (META_ARCH_REGISTRY, GeneralizedRCNN, PanopticFPN, ProposalNetwork,
                        RetinaNet, SemanticSegmentor, build_model)
from .proposal_generator import (PROPOSAL_GENERATOR_REGISTRY, RPN_HEAD_REGISTRY,
                                 build_proposal_generator, build_rpn_head)

__all__ = ["Box2BoxTransform", "Box2BoxTransformLinear", "Box2BoxTransformRotated", "Matcher",
           "GeneralizedRCNN", "META_ARCH_REGISTRY", "PanopticFPN", "ProposalNetwork", "RetinaNet",
           "SemanticSegmentor", "build_model"]
__all__ += ["BACKBONE_REGISTRY", "Backbone", "FPN", "ResNet", "ResNetBlockBase", "build_backbone",
            "build_resnet_backbone", "make_stage"]
__all__ += ["PROPOSAL_GENERATOR_REGISTRY", "RPN_HEAD_REGISTRY", "build_proposal_generator",
            "build_rpn_head"]
