"""Small tensor helpers Detectron2's layers export."""
from typing import List

import torch


def cat(tensors: List[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """torch.cat, without a copy for a single tensor."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"cat takes a list of tensors, got {type(tensors).__name__}")
    return tensors[0] if len(tensors) == 1 else torch.cat(tensors, dim)


def nonzero_tuple(x: torch.Tensor):
    """x.nonzero(as_tuple=True), also for a 0-d tensor and in TorchScript (which has no
    as_tuple)."""
    if torch.jit.is_scripting() or x.dim() == 0:
        if x.dim() == 0:
            x = x.unsqueeze(0)
        return x.nonzero().unbind(1)
    return x.nonzero(as_tuple=True)


def shapes_to_tensor(x: List[int], device=None) -> torch.Tensor:
    """A list of ints (or 0-d tensors) as a tensor."""
    if torch.jit.is_tracing() and all(isinstance(t, torch.Tensor) for t in x):
        return torch.stack(x)
    return torch.as_tensor(x, device=device)


def empty_input_loss_func_wrapper(loss_func):
    """`loss_func` (input, target, reduction=...), giving a 0 that keeps the graph (input.sum() *
    0) for an empty input with reduction "mean", where torch's functions give NaN."""

    def loss_or_zero(input, target, *, reduction="mean", **kwargs):
        if target.numel() == 0 and reduction == "mean":
            return input.sum() * 0.0
        return loss_func(input, target, reduction=reduction, **kwargs)

    return loss_or_zero


cross_entropy = empty_input_loss_func_wrapper(torch.nn.functional.cross_entropy)

# Detectron2's other names for torch's layers, which take empty inputs as they are.
ConvTranspose2d = torch.nn.ConvTranspose2d
BatchNorm2d = torch.nn.BatchNorm2d
Linear = torch.nn.Linear
interpolate = torch.nn.functional.interpolate


@torch.jit.script_if_tracing
def move_device_like(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """`src` on `dst`'s device (a traced graph keeps the move)."""
    return src.to(dst.device)
