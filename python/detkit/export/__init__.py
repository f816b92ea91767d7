"""detkit.export: Detectron2's TorchScript helpers (detectron2.export.torchscript): scripting a
module whose code uses Instances, by replacing Instances with a class of typed fields."""
from .torchscript import scripting_with_instances
from .torchscript_patch import freeze_training_mode, patch_builtin_len, patch_instances

__all__ = ["freeze_training_mode", "patch_builtin_len",
           "patch_instances", "scripting_with_instances"]
