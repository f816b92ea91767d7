"""Context managers that make detkit modules scriptable or traceable: patch_instances (Instances
as a class of typed fields), patch_builtin_len and freeze_training_mode."""
import importlib.util
import itertools
import os
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from copy import deepcopy
from unittest import mock

import torch

from ..structures.instances import Instances
from .instances_source import instances_module_source

_class_numbers = itertools.count(1)


def _forget_compiled():
    """Drops TorchScript's caches of compiled modules and free functions: code compiled against
    one field set of Instances must be compiled again against the next."""
    from torch.jit._recursive import concrete_type_store
    from torch.jit._state import _jit_caching_layer

    concrete_type_store.type_store.clear()
    _jit_caching_layer.clear()


def _import_source(module_name, source, directory):
    """The module `module_name` made from source (written to a file: TorchScript reads the
    source of what it compiles)."""
    path = os.path.join(directory, module_name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _attach_from_instances(scripted_cls):
    @torch.jit.unused
    def from_instances(instances: Instances):
        """A copy of an eager Instances as scripted_cls (each field deep-copied)."""
        out = scripted_cls(instances.image_size)
        for name, value in instances.get_fields().items():
            if name not in out._field_names:
                raise ValueError(f"from_instances: field '{name}' is not one of "
                                 f"{scripted_cls.__name__}'s fields {out._field_names}")
            setattr(out, name, deepcopy(value))
        return out

    scripted_cls.from_instances = from_instances


@contextmanager
def patch_instances(fields):
    """Within it, TorchScript compiles Instances (in annotations and constructor calls) as a
    generated class whose fields are `fields` (dict name -> type, e.g. {"pred_boxes": Boxes,
    "scores": torch.Tensor}); yields that class. Eager Instances is untouched."""
    number = next(_class_numbers)
    cls_name = f"ScriptedInstances{number}"
    module_name = f"detkit_scripted_instances{number}"
    source = instances_module_source(cls_name, fields)
    with tempfile.TemporaryDirectory(prefix="detkit_instances") as directory:
        try:
            _forget_compiled()
            module = _import_source(module_name, source, directory)
            scripted_cls = getattr(module, cls_name)
            # names in the class resolve in its own module (not in the caller's frame)
            resolve = torch._jit_internal.createResolutionCallbackForClassMethods(scripted_cls)
            torch.jit.script(scripted_cls, _rcb=resolve)
            Instances.__torch_script_class__ = True
            Instances._jit_override_qualname = torch._jit_internal._qualified_name(scripted_cls)
            _attach_from_instances(scripted_cls)
            yield scripted_cls
        finally:
            for attribute in ("__torch_script_class__", "_jit_override_qualname"):
                if attribute in Instances.__dict__:
                    delattr(Instances, attribute)
            sys.modules.pop(module_name, None)


# detkit's modules whose len() calls patch_builtin_len() patches by default (Detectron2's list);
# one that this detkit does not have is left out
_LEN_PATCHED_MODULES = ("detkit.modeling.roi_heads.fast_rcnn",
                        "detkit.modeling.roi_heads.mask_head",
                        "detkit.modeling.roi_heads.keypoint_head")


def _module_exists(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


@contextmanager
def patch_builtin_len(modules=()):
    """Within it, `len(x)` in detkit's ROI head modules and in the named modules (dotted names)
    calls x.__len__(), which under tracing may return a tensor instead of a constant int."""
    def length(obj):
        return obj.__len__()

    names = [m for m in _LEN_PATCHED_MODULES if _module_exists(m)] + list(modules)
    with ExitStack() as stack:
        for name in names:
            if name not in sys.modules:
                importlib.import_module(name)
            patched = stack.enter_context(mock.patch(name + ".len", create=True))
            patched.side_effect = length
        yield


@contextmanager
def freeze_training_mode(model):
    """Within it, `training` of every submodule class of model is a TorchScript constant
    (Final[bool]), so that scripting compiles only the branch of the current mode."""
    saved = {}
    for cls in {type(m) for m in model.modules()}:
        saved[cls] = cls.__dict__.get("__annotations__")
        annotations = dict(saved[cls] or {})
        annotations["training"] = torch.jit.Final[bool]
        cls.__annotations__ = annotations
    try:
        yield
    finally:
        for cls, annotations in saved.items():
            if annotations is None:
                del cls.__annotations__
            else:
                cls.__annotations__ = annotations
