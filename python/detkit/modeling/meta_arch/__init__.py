"""detkit.modeling.meta_arch: Detectron2's META_ARCH_REGISTRY, build_model and its built-in
meta-architectures (detkit's C++ models as nn.Modules)."""
from .build import META_ARCH_REGISTRY, build_model
from .native import GeneralizedRCNN, PanopticFPN, ProposalNetwork, RetinaNet, SemanticSegmentor
from .semantic_seg import SEM_SEG_HEADS_REGISTRY, build_sem_seg_head

__all__ = ["GeneralizedRCNN", "META_ARCH_REGISTRY", "PanopticFPN", "ProposalNetwork", "RetinaNet",
           "SemanticSegmentor", "build_model"]
__all__ += ["SEM_SEG_HEADS_REGISTRY", "build_sem_seg_head"]
