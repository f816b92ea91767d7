"""Detectron2's optimizer and LR schedule from a config (detectron2.solver.build): SGD over the
model's parameters in groups (SOLVER.WEIGHT_DECAY_NORM for normalisation layers,
SOLVER.BIAS_LR_FACTOR / WEIGHT_DECAY_BIAS for biases), gradient clipping
(SOLVER.CLIP_GRADIENTS), and SOLVER.LR_SCHEDULER_NAME's schedule with its warm-up. detkit's C++
trainer reads the same keys (detkit/solver/)."""
import copy
import itertools
import logging
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional

import torch

from .lr_scheduler import LRMultiplier, LRScheduler, WarmupParamScheduler
from .param_scheduler import (CosineParamScheduler, MultiStepParamScheduler,
                              StepWithFixedGammaParamScheduler)

__all__ = ["build_lr_scheduler", "build_optimizer", "get_default_optimizer_params",
           "maybe_add_gradient_clipping", "reduce_param_groups"]

_NORM_TYPES = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d,
               torch.nn.SyncBatchNorm, torch.nn.GroupNorm, torch.nn.InstanceNorm1d,
               torch.nn.InstanceNorm2d, torch.nn.InstanceNorm3d, torch.nn.LayerNorm,
               torch.nn.LocalResponseNorm)


def _gradient_clipper(clip_cfg):
    """SOLVER.CLIP_GRADIENTS: clip each parameter's gradient by value or by norm."""
    clip_type, value, norm_type = clip_cfg.CLIP_TYPE, clip_cfg.CLIP_VALUE, clip_cfg.NORM_TYPE
    if clip_type == "value":
        return lambda p: torch.nn.utils.clip_grad_value_(p, value)
    if clip_type == "norm":
        return lambda p: torch.nn.utils.clip_grad_norm_(p, value, norm_type)
    raise ValueError(f"SOLVER.CLIP_GRADIENTS.CLIP_TYPE must be 'value' or 'norm', got "
                     f"{clip_type!r}")


def maybe_add_gradient_clipping(cfg, optimizer):
    """With SOLVER.CLIP_GRADIENTS.ENABLED: an optimizer class (or the optimizer, its class
    changed) whose step() first clips every parameter's gradient; else `optimizer` as it is."""
    if not cfg.SOLVER.CLIP_GRADIENTS.ENABLED:
        return optimizer
    is_instance = isinstance(optimizer, torch.optim.Optimizer)
    base = type(optimizer) if is_instance else optimizer
    if not (isinstance(base, type) and issubclass(base, torch.optim.Optimizer)):
        raise TypeError(f"maybe_add_gradient_clipping(optimizer=) must be a torch.optim.Optimizer "
                        f"or a subclass, got {optimizer!r}")
    clip = _gradient_clipper(cfg.SOLVER.CLIP_GRADIENTS)

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                clip(p)
        return base.step(self, closure)

    clipped = type(base.__name__ + "WithGradientClip", (base,), {"step": step})
    if is_instance:
        optimizer.__class__ = clipped
        return optimizer
    return clipped


def build_optimizer(cfg, model: torch.nn.Module) -> torch.optim.Optimizer:
    """SGD (SOLVER.BASE_LR, MOMENTUM, NESTEROV, WEIGHT_DECAY) over get_default_optimizer_params."""
    params = get_default_optimizer_params(
        model, base_lr=cfg.SOLVER.BASE_LR, weight_decay_norm=cfg.SOLVER.WEIGHT_DECAY_NORM,
        bias_lr_factor=cfg.SOLVER.BIAS_LR_FACTOR, weight_decay_bias=cfg.SOLVER.WEIGHT_DECAY_BIAS)
    sgd = torch.optim.SGD(params, lr=cfg.SOLVER.BASE_LR, momentum=cfg.SOLVER.MOMENTUM,
                          nesterov=cfg.SOLVER.NESTEROV, weight_decay=cfg.SOLVER.WEIGHT_DECAY,
                          foreach=True)
    return maybe_add_gradient_clipping(cfg, sgd)


def get_default_optimizer_params(model: torch.nn.Module, base_lr: Optional[float] = None,
                                 weight_decay: Optional[float] = None,
                                 weight_decay_norm: Optional[float] = None,
                                 bias_lr_factor: Optional[float] = 1.0,
                                 weight_decay_bias: Optional[float] = None,
                                 lr_factor_func: Optional[Callable] = None,
                                 overrides: Optional[Dict[str, Dict[str, float]]] = None
                                 ) -> List[Dict[str, Any]]:
    """Param groups for an optimizer: every trainable parameter once, with lr = base_lr and
    weight_decay (where given), weight_decay_norm in normalisation layers, lr = base_lr *
    bias_lr_factor and weight_decay_bias for parameters named "bias", lr times
    lr_factor_func("module.param"), and overrides {param name: {hyperparameter: value}} last;
    parameters with the same hyperparameters share a group."""
    overrides = dict(overrides or {})
    defaults = {}
    if base_lr is not None:
        defaults["lr"] = base_lr
    if weight_decay is not None:
        defaults["weight_decay"] = weight_decay
    bias_overrides = {}
    if bias_lr_factor is not None and bias_lr_factor != 1.0:
        if base_lr is None:
            raise ValueError("bias_lr_factor requires base_lr")
        bias_overrides["lr"] = base_lr * bias_lr_factor
    if weight_decay_bias is not None:
        bias_overrides["weight_decay"] = weight_decay_bias
    if bias_overrides:
        if "bias" in overrides:
            raise ValueError("Conflicting overrides for 'bias': from overrides and from "
                             "bias_lr_factor / weight_decay_bias")
        overrides["bias"] = bias_overrides
    if lr_factor_func is not None and base_lr is None:
        raise ValueError("lr_factor_func requires base_lr")

    params, seen = [], set()
    for module_name, module in model.named_modules():
        for name, value in module.named_parameters(recurse=False):
            if not value.requires_grad or value in seen:
                continue
            seen.add(value)
            hyperparams = dict(defaults)
            if isinstance(module, _NORM_TYPES) and weight_decay_norm is not None:
                hyperparams["weight_decay"] = weight_decay_norm
            if lr_factor_func is not None:
                hyperparams["lr"] *= lr_factor_func(f"{module_name}.{name}")
            hyperparams.update(overrides.get(name, {}))
            params.append({"params": [value], **hyperparams})
    return reduce_param_groups(params)


def _expand_param_groups(params: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One group per parameter, in first-seen order; a later group's hyperparameters override an
    earlier one's for the parameters they share."""
    per_param = {}
    for group in params:
        if "params" not in group:
            raise ValueError(f"a param group needs 'params', got keys {sorted(group)}")
        hyperparams = {k: v for k, v in group.items() if k not in ("params", "param_names")}
        names = group.get("param_names")
        for i, param in enumerate(group["params"]):
            entry = per_param.setdefault(param, {})
            entry.update(params=[param], **hyperparams)
            if names is not None:
                entry["param_names"] = [names[i]]
    return list(per_param.values())


def reduce_param_groups(params: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The fewest groups: parameters with the same hyperparameters (after _expand_param_groups)
    share one, in first-seen order (the multi-tensor optimizers run faster so)."""
    merged = {}
    for entry in _expand_param_groups(params):
        key = tuple((k, v) for k, v in entry.items() if k not in ("params", "param_names"))
        group = merged.get(key)
        if group is None:
            group = merged[key] = {**dict(key), "params": []}
            if "param_names" in entry:
                group["param_names"] = []
        group["params"].extend(entry["params"])
        if "param_names" in entry:
            group["param_names"].extend(entry["param_names"])
    return list(merged.values())


def build_lr_scheduler(cfg, optimizer: torch.optim.Optimizer) -> LRScheduler:
    """SOLVER.LR_SCHEDULER_NAME over SOLVER.MAX_ITER iterations: WarmupMultiStepLR (times
    SOLVER.GAMMA at each of SOLVER.STEPS; steps past MAX_ITER ignored), WarmupCosineLR (to
    SOLVER.BASE_LR_END) or WarmupStepWithFixedGammaLR (SOLVER.NUM_DECAYS equal steps), after
    SOLVER.WARMUP_ITERS of SOLVER.WARMUP_METHOD warm-up from SOLVER.WARMUP_FACTOR."""
    solver = cfg.SOLVER
    name, max_iter = solver.LR_SCHEDULER_NAME, solver.MAX_ITER
    if max_iter <= 0:
        raise ValueError(f"SOLVER.MAX_ITER must be positive, got {max_iter}")
    if name == "WarmupMultiStepLR":
        steps = [s for s in solver.STEPS if s <= max_iter]
        if len(steps) != len(solver.STEPS):
            logging.getLogger(__name__).warning(
                "SOLVER.STEPS contains values larger than SOLVER.MAX_ITER. "
                "These values will be ignored.")
        schedule = MultiStepParamScheduler([solver.GAMMA**k for k in range(len(steps) + 1)],
                                           num_updates=max_iter, milestones=steps)
    elif name == "WarmupCosineLR":
        end_value = solver.BASE_LR_END / solver.BASE_LR
        if not 0.0 <= end_value <= 1.0:
            raise ValueError(f"SOLVER.BASE_LR_END ({solver.BASE_LR_END}) must be in [0, "
                             f"SOLVER.BASE_LR ({solver.BASE_LR})]")
        schedule = CosineParamScheduler(1, end_value)
    elif name == "WarmupStepWithFixedGammaLR":
        schedule = StepWithFixedGammaParamScheduler(base_value=1.0, gamma=solver.GAMMA,
                                                    num_decays=solver.NUM_DECAYS,
                                                    num_updates=max_iter)
    else:
        raise ValueError(f"Unknown LR scheduler: SOLVER.LR_SCHEDULER_NAME {name!r} "
                         "(WarmupMultiStepLR, WarmupCosineLR or WarmupStepWithFixedGammaLR)")
    schedule = WarmupParamScheduler(schedule, solver.WARMUP_FACTOR,
                                    min(solver.WARMUP_ITERS / max_iter, 1.0),
                                    solver.WARMUP_METHOD, solver.RESCALE_INTERVAL)
    return LRMultiplier(optimizer, multiplier=schedule, max_iter=max_iter)
