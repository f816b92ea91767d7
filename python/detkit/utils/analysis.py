"""Detectron2's detectron2.utils.analysis: FLOPs and parameters of a model.

detkit's built-in models (detkit.modeling.build_model) are counted by detkit's C++ counter (the
one `detkit analyze-model --tasks flop` runs: fvcore's rules, one multiply-add one flop, on the
ATen convolution and linear ops one evaluation pass runs). Other nn.Modules are counted with
torch's FlopCounterMode (torch.utils.flop_counter), halved to fvcore's multiply-adds, by
operator: convolutions as "conv", matrix products as "linear" / "matmul"."""
from collections import defaultdict

import torch
from torch import nn

from .. import _C

__all__ = ["FlopCountAnalysis", "activation_count_operators", "find_unused_parameters",
           "flop_count_operators", "parameter_count", "parameter_count_table"]

_TORCH_OPS = {"convolution": "conv", "_convolution": "conv", "mm": "linear", "addmm": "linear",
              "bmm": "matmul", "baddbmm": "matmul", "matmul": "matmul"}


def _native(model):
    if isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
        model = model.module
    return getattr(model, "_native", None), model


def _one_image(inputs):
    if not isinstance(inputs, (list, tuple)) or len(inputs) != 1 or "image" not in inputs[0]:
        raise ValueError("flop counting takes a list of one input dict with an 'image' "
                         "(batch size 1, as Detectron2's)")
    return [{"image": inputs[0]["image"]}]  # other keys dropped, as Detectron2 drops them


class FlopCountAnalysis:
    """fvcore's FlopCountAnalysis as Detectron2 uses it: total(), by_operator(), by_module()
    (flops, one multiply-add one flop) of `model` on `inputs` (batched inputs, run in eval)."""

    def __init__(self, model, inputs):
        native, module = _native(model)
        was_training = module.training
        module.eval()
        try:
            if native is not None:
                from ..modeling.meta_arch.native import _native_input
                batch = [_native_input(i, d, module.device) for i, d in enumerate(inputs)]
                by_operator, by_module = _C.model_flop_count(native, batch)
            else:
                by_operator, by_module = _torch_count(module, inputs)
        finally:
            module.train(was_training)
        self._by_operator = dict(by_operator)
        self._by_module = defaultdict(int)
        for name, flops in by_module.items():  # each module's count includes its children's
            parts = name.split(".") if name else []
            for k in range(len(parts) + 1):
                self._by_module[".".join(parts[:k])] += flops

    def total(self, module_name=""):
        return self._by_module.get(module_name, 0)

    def by_operator(self, module_name=""):
        if module_name:
            raise NotImplementedError("FlopCountAnalysis.by_operator of a submodule: detkit "
                                      "counts operators for the whole model")
        return dict(self._by_operator)

    def by_module(self):
        return dict(self._by_module)


def _torch_count(module, inputs):
    from torch.utils.flop_counter import FlopCounterMode
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        module(inputs)
    by_operator = defaultdict(int)
    for op, flops in counter.get_flop_counts().get("Global", {}).items():
        name = str(op).split(".")[1] if "." in str(op) else str(op)  # aten.NAME[.overload]
        by_operator[_TORCH_OPS.get(name, name)] += flops // 2  # multiply-adds
    return by_operator, {"": sum(by_operator.values())}


def flop_count_operators(model, inputs):
    """GFLOPs per operator ("conv", "linear", "conv_transpose", ...) of one evaluation pass on
    one image (the batched inputs' other keys are ignored)."""
    return {k: v / 1e9 for k, v in FlopCountAnalysis(model, _one_image(inputs)).by_operator()
            .items()}


def activation_count_operators(model, inputs, **kwargs):
    raise NotImplementedError("activation_count_operators: detkit counts FLOPs and parameters, "
                              "not activations")


def parameter_count(model):
    """Parameters per module name prefix ("" the whole model), as fvcore's parameter_count."""
    counts = defaultdict(int)
    for name, prm in model.named_parameters():
        parts = name.split(".")
        for k in range(len(parts) + 1):
            counts[".".join(parts[:k])] += prm.numel()
    return counts


def parameter_count_table(model, max_depth=3):
    """A two-column text table of parameter_count down to `max_depth` levels."""
    counts = parameter_count(model)
    rows = [("model", counts[""])]
    rows += [(name, n) for name, n in counts.items()
             if name and name.count(".") < max_depth]
    width = max(len(name) for name, _ in rows)
    lines = [f"| {'name'.ljust(width)} | #elements or shape |", f"|{'-' * (width + 2)}|:--|"]
    lines += [f"| {name.ljust(width)} | {_human(n)} |" for name, n in rows]
    return "\n".join(lines)


def _human(n):
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def find_unused_parameters(model, inputs):
    """Names of the parameters no loss reaches: one training forward and backward pass."""
    if not model.training:
        raise AssertionError("find_unused_parameters: the model must be in training mode")
    for _, prm in model.named_parameters():
        prm.grad = None
    losses = model(*inputs) if isinstance(inputs, tuple) else model(inputs)
    if isinstance(losses, dict):
        losses = sum(losses.values())
    losses.backward()
    unused = [name for name, prm in model.named_parameters() if prm.grad is None]
    for _, prm in model.named_parameters():
        prm.grad = None
    return unused
