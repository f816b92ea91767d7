"""Detectron2's META_ARCH_REGISTRY and build_model(cfg) for meta-architectures registered from
Python. detkit's built-in models (GeneralizedRCNN, RetinaNet, ...) run in C++
(detkit.engine.DefaultTrainer / DefaultPredictor) and have no Python nn.Module here yet."""
import torch

from ..._C import Error
from ...utils.registry import Registry

__all__ = ["META_ARCH_REGISTRY", "build_model"]

META_ARCH_REGISTRY = Registry("META_ARCH")
META_ARCH_REGISTRY.__doc__ = """Meta-architectures: nn.Module classes called as cls(cfg)."""

# what detkit's C++ engine builds itself
BUILTIN_META_ARCHITECTURES = ("GeneralizedRCNN", "RetinaNet", "SemanticSegmentor", "PanopticFPN",
                              "ProposalNetwork")


def build_model(cfg):
    """META_ARCH_REGISTRY.get(cfg.MODEL.META_ARCHITECTURE)(cfg), moved to cfg.MODEL.DEVICE.
    Not registered: a built-in architecture's name is a detkit.Error saying its Python module is
    not there yet; another name is the registry's KeyError listing the registered ones."""
    meta_arch = cfg.MODEL.META_ARCHITECTURE
    if meta_arch not in META_ARCH_REGISTRY and meta_arch in BUILTIN_META_ARCHITECTURES:
        raise Error(f"build_model: detkit's {meta_arch} runs in C++ (DefaultTrainer, "
                    "DefaultPredictor); a Python nn.Module for the built-in models is not there "
                    "yet")
    model = META_ARCH_REGISTRY.get(meta_arch)(cfg)
    model.to(torch.device(cfg.MODEL.DEVICE))
    return model
