"""Detectron2's detectron2.export.torchscript: scripting_with_instances (torch.jit.script of a
model in eval mode whose code uses Instances, with Instances of the given typed fields) and
dump_torchscript_IR (a traced or scripted model's code and graphs written to text files)."""
import os

import torch

from ..utils.file_io import PathManager
from .torchscript_patch import freeze_training_mode, patch_instances

__all__ = ["dump_torchscript_IR", "patch_instances", "scripting_with_instances"]


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


# Detectron2's former name of scripting_with_instances
export_torchscript_with_instances = scripting_with_instances


def _code_of(module):
    """The TorchScript code of a module (its class with every method where available), or
    None for a module that has none (e.g. a plain nn.Module inside a scripted one)."""
    for read in (lambda m: m._c.code, lambda m: m.code):
        try:
            return read(module)
        except (AttributeError, RuntimeError):
            continue
    return None


def _write_module_code(out, module, path):
    """The code of module and of each submodule under it, each under a header naming it."""
    code = _code_of(module)
    name = path or "root model"
    kind = getattr(module, "original_name", type(module).__name__)
    if code is None:
        out.write(f"Could not find code for {name} (type={kind})\n\n")
    else:
        out.write(f"\nCode for {name}, type={kind}:\n{code}\n{'-' * 80}")
    for child_name, child in module.named_children():
        _write_module_code(out, child, f"{path}.{child_name}")


def _graph_text(model):
    """The model's graph; for a module, those of every method of it and its submodules."""
    if isinstance(model, torch.jit.ScriptFunction):
        return model.graph.str()
    # dump_to_str(code, attributes, params): methods' graphs, recursively into submodules
    return model._c.dump_to_str(True, False, False)


def dump_torchscript_IR(model, dir):
    """Writes, into directory `dir` (created if needed), a traced or scripted module's or
    function's code (model_ts_code.txt), graph (model_ts_IR.txt) and graph with every call
    inlined (model_ts_IR_inlined.txt); for a module also its printed structure (model.txt)."""
    is_function = isinstance(model, torch.jit.ScriptFunction)
    if not (is_function or isinstance(model, torch.jit.ScriptModule)):
        raise TypeError(f"dump_torchscript_IR takes a traced or scripted module or function, "
                        f"got {type(model).__name__}")
    dir = os.path.expanduser(dir)
    PathManager.mkdirs(dir)

    def write(name, text_or_writer):
        with PathManager.open(os.path.join(dir, name), "w") as out:
            if callable(text_or_writer):
                text_or_writer(out)
            else:
                out.write(text_or_writer)

    if is_function:
        write("model_ts_code.txt", model.code)
    else:
        write("model_ts_code.txt", lambda out: _write_module_code(out, model, ""))
    write("model_ts_IR.txt", _graph_text(model))
    write("model_ts_IR_inlined.txt", str(model.inlined_graph))
    if not is_function:
        write("model.txt", str(model))
