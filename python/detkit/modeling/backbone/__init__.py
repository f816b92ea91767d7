"""detkit.modeling.backbone: Detectron2's backbones (detectron2.modeling.backbone) as Python
modules: Backbone, BACKBONE_REGISTRY / build_backbone, ResNet and its blocks, FPN."""
from .build import BACKBONE_REGISTRY, build_backbone  # noqa: F401 (first: the builders register)
from .backbone import Backbone
from .resnet import (BasicBlock, BasicStem, BottleneckBlock, DeformBottleneckBlock, ResNet,
                     ResNetBlockBase, build_resnet_backbone, make_stage)
from .fpn import (FPN, LastLevelMaxPool, LastLevelP6P7, build_resnet_fpn_backbone,
                  build_retinanet_resnet_fpn_backbone)

__all__ = ["BACKBONE_REGISTRY", "Backbone", "BasicBlock", "BasicStem", "BottleneckBlock",
           "DeformBottleneckBlock", "FPN", "LastLevelMaxPool", "LastLevelP6P7", "ResNet",
           "ResNetBlockBase", "build_backbone", "build_resnet_backbone",
           "build_resnet_fpn_backbone", "build_retinanet_resnet_fpn_backbone", "make_stage"]
