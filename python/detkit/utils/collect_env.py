"""collect_env_info() (Detectron2's detectron2.utils.collect_env): a table of the environment
detkit runs in (platform, Python, numpy, detkit and its native extension, the torch it runs on
with its threads / BLAS / oneDNN line, GPUs, torchvision, OpenCV) followed by torch's own
build configuration. `python -m detkit.utils.collect_env` prints it."""
import importlib
import os
import sys

import numpy as np
import torch

__all__ = ["collect_env_info"]


def _module_version(name):
    """"version @folder" of an optional module, or "not found"."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        return "not found"
    version = getattr(module, "__version__", "unknown")
    return f"{version} @{os.path.dirname(module.__file__)}"


def _detkit_rows():
    rows = []
    try:
        import detkit
        from detkit import _C
    except ImportError as e:
        return [("detkit", f"failed to import: {e}")]
    rows.append(("detkit", f"@{os.path.dirname(detkit.__file__)}"))
    rows.append(("detkit._C", _C.__file__))
    rows.append(("detkit's torch", _C.torch_build_report()))
    return rows


def _gpu_rows():
    if not torch.cuda.is_available():
        return [("GPU available", "No: torch.cuda.is_available() is False")]
    rows = [("GPU available", "Yes")]
    names = {}
    for k in range(torch.cuda.device_count()):
        name = torch.cuda.get_device_name(k)
        major, minor = torch.cuda.get_device_capability(k)
        names.setdefault(f"{name} (arch={major}.{minor})", []).append(str(k))
    rows += [(f"GPU {','.join(ids)}", name) for name, ids in names.items()]
    rows.append(("CUDA (torch built with)", str(torch.version.cuda)))
    return rows


def _table(rows):
    width = max(len(key) for key, _ in rows)
    rule = "-" * width + "  " + "-" * 40
    lines = [rule] + [f"{key:<{width}}  {value}" for key, value in rows] + [rule]
    return "\n".join(lines) + "\n"


def collect_env_info():
    """The environment as a text table, then torch.__config__.show()."""
    rows = [("sys.platform", sys.platform), ("Python", sys.version.replace("\n", "")),
            ("numpy", np.__version__)]
    rows += _detkit_rows()
    rows.append(("PyTorch", f"{torch.__version__} @{os.path.dirname(torch.__file__)}"))
    rows.append(("PyTorch debug build", str(torch.version.debug)))
    rows += _gpu_rows()
    rows.append(("torchvision", _module_version("torchvision")))
    rows.append(("cv2", _module_version("cv2")))
    return _table(rows) + torch.__config__.show()


if __name__ == "__main__":
    print(collect_env_info())
