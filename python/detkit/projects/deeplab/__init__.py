"""detkit.projects.deeplab: Detectron2's DeepLab project (projects/DeepLab/deeplab): its config
keys, the poly LR schedule, hard-pixel-mining cross-entropy, the DeepLab ResNet backbone and the
DeepLabV3 / DeepLabV3+ semantic segmentation heads (registered on import)."""
from .build_solver import build_lr_scheduler
from .config import add_deeplab_config
from .loss import DeepLabCE
from .lr_scheduler import WarmupPolyLR
from .resnet import DeepLabStem, build_resnet_deeplab_backbone
from .semantic_seg import DeepLabV3Head, DeepLabV3PlusHead

__all__ = ["DeepLabCE", "DeepLabStem", "DeepLabV3Head", "DeepLabV3PlusHead", "WarmupPolyLR",
           "add_deeplab_config", "build_lr_scheduler", "build_resnet_deeplab_backbone"]
