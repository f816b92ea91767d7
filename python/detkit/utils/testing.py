"""Helpers Detectron2's unit tests import (detectron2.utils.testing), with its behaviour."""
import functools
import io
import json
import os
import unittest

import numpy as np
import torch

from .torch_version_utils import min_torch_version


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
    same_size = (torch.equal(torch.as_tensor(a.image_size), torch.as_tensor(b.image_size))
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


# Detectron2's coco_2017_val_100 (under $DETECTRON2_DATASETS), then detkit's shared coco_tiny
_SAMPLE_COCO_SOURCES = (("coco/annotations/instances_val2017_100.json", "coco/val2017"),
                        ("data/coco_tiny/annotations/instances_val2017.json",
                         "data/coco_tiny/val2017"))


def _shared_dir():
    """detkit's shared data folder: $DETKIT_SHARED_DIR, else a `shared` folder next to one
    holding this package (the repository's ../shared); None where neither is found."""
    if os.environ.get("DETKIT_SHARED_DIR"):
        return os.environ["DETKIT_SHARED_DIR"]
    folder = os.path.dirname(os.path.abspath(__file__))
    while os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
        candidate = os.path.join(folder, "shared")
        if os.path.isdir(os.path.join(candidate, "data", "coco_tiny")):
            return candidate
    return None


def _first_image_of(annotations, image_root):
    """The file of the image of smallest id in a COCO instances file (Detectron2's dataset
    order), or None where the files are absent."""
    if not os.path.isfile(annotations):
        return None
    with open(annotations, encoding="utf-8") as f:
        images = json.load(f).get("images", [])
    if not images:
        return None
    path = os.path.join(image_root, min(images, key=lambda i: i["id"])["file_name"])
    return path if os.path.isfile(path) else None


def get_sample_coco_image(tensor=True):
    """A local COCO image in BGR: a (3, H, W) uint8 tensor, or (H, W, 3) numpy array when
    tensor is False. The first image of Detectron2's coco_2017_val_100 under
    $DETECTRON2_DATASETS (default "datasets"), else of detkit's shared data/coco_tiny val2017.
    detkit never downloads it: FileNotFoundError naming the places looked at otherwise."""
    from ..data.detection_utils import read_image

    roots = [os.environ.get("DETECTRON2_DATASETS", "datasets"), _shared_dir()]
    looked_at = []
    for root, (annotations, images) in zip(roots, _SAMPLE_COCO_SOURCES):
        if root is None:
            looked_at.append(f"{annotations} in detkit's shared folder (not found; set "
                             "DETKIT_SHARED_DIR)")
            continue
        file_name = _first_image_of(os.path.join(root, annotations), os.path.join(root, images))
        if file_name is not None:
            image = read_image(file_name, format="BGR")
            if tensor:
                return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)))
            return image
        looked_at.append(f"{os.path.join(root, annotations)} with its images in "
                         f"{os.path.join(root, images)}")
    raise FileNotFoundError("get_sample_coco_image needs a local COCO image (detkit does not "
                            "download one); looked for " + "; ".join(looked_at))


def has_dynamic_axes(onnx_model):
    """Whether no input or output dimension of the ONNX model is named by a number (the
    exporter names a dynamic axis by the name dynamic_axes gave it)."""
    values = list(onnx_model.graph.input) + list(onnx_model.graph.output)
    return all(not dim.dim_param.isnumeric()
               for value in values for dim in value.type.tensor_type.shape.dim)


def register_custom_op_onnx_export(opname, symbolic_fn, opset_version, min_version):
    """Registers symbolic_fn as the ONNX symbolic of opname ("ns::op") from opset_version on,
    only where torch is older than min_version (newer torch has the fixed symbolic); the caller
    must unregister it (unregister_custom_op_onnx_export)."""
    if min_torch_version(min_version):
        return
    torch.onnx.register_custom_op_symbolic(opname, symbolic_fn, opset_version)
    print(f"_register_custom_op_onnx_export({opname}, {opset_version}) succeeded.")


def unregister_custom_op_onnx_export(opname, opset_version, min_version):
    """Undoes register_custom_op_onnx_export with the same arguments."""
    if min_torch_version(min_version):
        return
    torch.onnx.unregister_custom_op_symbolic(opname, opset_version)
    print(f"_unregister_custom_op_onnx_export({opname}, {opset_version}) succeeded.")


def _pytorch1111_symbolic_opset9_to(g, self, *args):
    """aten::to's opset-9 ONNX symbolic as PyTorch 1.11.1 fixed it (a device-only cast is
    dropped, a dtype cast becomes Cast): torch's own, which is that one on every torch detkit
    supports; Detectron2 registers it on older torch only."""
    from torch.onnx import symbolic_opset9
    return symbolic_opset9.to(g, self, *args)


def _pytorch1111_symbolic_opset9_repeat_interleave(g, self, repeats, dim=None, output_size=None):
    """aten::repeat_interleave's opset-9 ONNX symbolic as PyTorch 1.11.1 fixed it: torch's own,
    which is that one on every torch detkit supports."""
    from torch.onnx import symbolic_opset9
    return symbolic_opset9.repeat_interleave(g, self, repeats, dim, output_size)


# Skipped on a CI machine (CI set) without CUDA, where Detectron2 finds these tests too slow.
skipIfOnCPUCI = unittest.skipIf(
    bool(os.environ.get("CI")) and not torch.cuda.is_available(),
    "The test is too slow on CPUs and will be executed on CircleCI's GPU jobs.")


def skipIfUnsupportedMinOpsetVersion(min_opset_version, current_opset_version=None):
    """Decorates a test method: skipped when the test case's `opset_version` (else
    current_opset_version) is below min_opset_version."""
    def decorate(test):
        @functools.wraps(test)
        def run(self):
            opset_version = getattr(self, "opset_version", current_opset_version)
            if opset_version < min_opset_version:
                raise unittest.SkipTest(f"Unsupported opset_version {opset_version}, required "
                                        f"is {min_opset_version}")
            return test(self)
        return run
    return decorate


def skipIfUnsupportedMinTorchVersion(min_version):
    """Skips a test (or test case) where torch is older than min_version."""
    return unittest.skipIf(not min_torch_version(min_version),
                           f"module 'torch' has __version__ {torch.__version__}, required is: "
                           f"{min_version}")
