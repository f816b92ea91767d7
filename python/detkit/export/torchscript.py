"""scripting_with_instances (Detectron2's detectron2.export.torchscript): torch.jit.script of a
model in eval mode whose code uses Instances, with Instances of the given typed fields."""
import torch

from .torchscript_patch import freeze_training_mode, patch_instances

__all__ = ["patch_instances", "scripting_with_instances"]


def scripting_with_instances(model, fields):
    """model (an nn.Module in eval mode) scripted with Instances standing for a class whose
    fields are `fields` (dict name -> type, e.g. {"pred_boxes": Boxes, "scores": Tensor});
    `training` is compiled as a constant."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"scripting_with_instances takes an nn.Module, got "
                        f"{type(model).__name__}")
    if model.training:
        raise ValueError("scripting_with_instances: only a model in eval mode can be scripted "
                         "(call model.eval() first)")
    with freeze_training_mode(model), patch_instances(fields):
        return torch.jit.script(model)
