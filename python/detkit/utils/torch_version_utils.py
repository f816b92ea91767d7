"""Detectron2's detectron2.utils.torch_version_utils: comparing the installed torch's version."""
from packaging import version


def min_torch_version(min_version: str) -> bool:
    """Whether the installed torch (its release, without a local "+cu..." tag) is at least
    min_version; False where torch does not import."""
    try:
        import torch
    except ImportError:
        return False
    installed = version.parse(torch.__version__.split("+")[0])
    return installed >= version.parse(min_version)
