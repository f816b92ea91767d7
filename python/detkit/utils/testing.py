"""Helpers Detectron2's unit tests import (detectron2.utils.testing), with its behaviour."""
import io

import torch


def random_boxes(num_boxes, max_coord=100, device="cpu"):
    """(num_boxes, 4) XYXY boxes with x0 <= x1, y0 <= y1 inside [0, max_coord]."""
    boxes = torch.rand(num_boxes, 4, device=device) * (max_coord * 0.5)
    boxes.clamp_(min=1.0)  # no empty box
    boxes[:, 2:] += boxes[:, :2]
    return boxes


def reload_script_model(module):
    """A scripted module saved to memory and loaded back."""
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    return torch.jit.load(buffer)


def assert_instances_allclose(input, other, *, rtol=1e-5, msg="", size_as_tensor=False):
    """AssertionError unless `input` and `other` (Instances, or the scripted classes of
    patch_instances) hold the same image size and fields, with: boxes within 100 * rtol pixels,
    float tensors within rtol of the larger magnitude (torch.allclose's own rtol kept), other
    tensors equal. A field of another type is a ValueError. size_as_tensor compares the image
    sizes as tensors (traced models give them so)."""
    from ..structures import Boxes, Instances, ROIMasks
    a = input if isinstance(input, Instances) else convert_scripted_instances(input)
    b = other if isinstance(other, Instances) else convert_scripted_instances(other)
    prefix = (msg.rstrip() + " ") if msg else "The Instances differ: "
    same_size = (torch.equal(torch.tensor(a.image_size), torch.tensor(b.image_size))
                 if size_as_tensor else a.image_size == b.image_size)
    assert same_size, f"{prefix}image sizes {a.image_size} and {b.image_size}"
    names, other_names = sorted(a.get_fields()), sorted(b.get_fields())
    assert names == other_names, f"{prefix}fields {names} and {other_names}"
    for name in names:
        x, y = a.get(name), b.get(name)
        if isinstance(x, (Boxes, ROIMasks)):
            close = torch.allclose(x.tensor, y.tensor, atol=100 * rtol)
        elif isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
            scale = x.abs().max().cpu().item() if x.numel() else 0.0
            close = torch.allclose(x, y, atol=scale * rtol)
        elif isinstance(x, torch.Tensor):
            close = torch.equal(x, y)
        else:
            raise ValueError(f"assert_instances_allclose: cannot compare field '{name}' of type "
                             f"{type(x).__name__}")
        assert close, f"{prefix}field '{name}' differs"


def convert_scripted_instances(instances):
    """An eager Instances of the fields set in a class made by patch_instances."""
    from ..structures.instances import Instances

    out = Instances(instances.image_size)
    for name in instances._field_names:
        value = getattr(instances, "_" + name)
        if value is not None:
            out.set(name, value)
    return out


def get_model_config(config_path):
    """The model zoo's config at `config_path`, on CPU when CUDA is absent."""
    from .. import model_zoo
    cfg = model_zoo.get_config(config_path)
    if not torch.cuda.is_available():
        cfg.MODEL.DEVICE = "cpu"
    return cfg


def get_model_no_weights(config_path):
    """The model zoo config's model (detkit.modeling.build_model) with its initial weights."""
    from ..modeling import build_model
    return build_model(get_model_config(config_path))
