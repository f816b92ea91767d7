"""detkit.modeling.meta_arch: Detectron2's META_ARCH_REGISTRY, build_model and its built-in
meta-architectures (detkit's C++ models as nn.Modules)."""
from .build import META_ARCH_REGISTRY, build_model
from .native import GeneralizedRCNN, PanopticFPN, ProposalNetwork, RetinaNet, SemanticSegmentor

__all__ = ["GeneralizedRCNN", "META_ARCH_REGISTRY", "PanopticFPN", "ProposalNetwork", "RetinaNet",
           "SemanticSegmentor", "build_model"]
