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
    """Raises AssertionError unless the two Instances have the same image size and fields, and
    each field is close (tensors with torch.allclose, Boxes by their tensors, others equal)."""
    if not msg:
        msg = "Two Instances are different! "
    else:
        msg = msg.rstrip() + " "
    size_error = msg + "image_size is {} vs. {}!".format(input.image_size, other.image_size)
    if size_as_tensor:
        assert torch.equal(torch.tensor(input.image_size), torch.tensor(other.image_size)), \
            size_error
    else:
        assert input.image_size == other.image_size, size_error
    fields = sorted(input.get_fields().keys())
    fields_other = sorted(other.get_fields().keys())
    assert fields == fields_other, msg + f"Fields are {fields} vs {fields_other}!"
    for f in fields:
        val1, val2 = input.get(f), other.get(f)
        if hasattr(val1, "tensor") and hasattr(val2, "tensor"):
            val1, val2 = val1.tensor, val2.tensor
        if isinstance(val1, torch.Tensor):
            if val1.dtype.is_floating_point:
                mag = torch.abs(val1).max().cpu().item() if val1.numel() else 0.0
                assert torch.allclose(val1, val2, atol=mag * rtol, rtol=0), \
                    msg + f"Field {f} differs too much!"
            else:
                assert torch.equal(val1, val2), msg + f"Field {f} is different!"
        else:
            assert val1 == val2, msg + f"Field {f} is different!"


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
