"""Parity oracle for detkit/solver, on tensors saved by tests/parity/oracle.cpp.

The optimizer is PyTorch's own torch.optim.SGD and the clipping torch.nn.utils' clip_grad_*_,
applied per parameter as Detectron2's maybe_add_gradient_clipping does. The LR schedule is
Detectron2's LRMultiplier (a torch.optim.lr_scheduler._LRScheduler) over fvcore's parameter
schedulers; Detectron2 and fvcore are not installed, so the few scheduler classes they use are
transcribed below from fvcore.common.param_scheduler and detectron2/solver/lr_scheduler.py.

Usage: python3 oracle_solver.py IN.pt OUT.pt MODE
MODE "schedule": cases (C, 10) float64 rows of
    [kind, max_iter, warmup_iters, warmup_factor, warmup_constant, rescale_interval, gamma,
     base_lr, base_lr_end, num_decays], kind 0 WarmupMultiStepLR, 1 WarmupCosineLR,
    2 WarmupStepWithFixedGammaLR; steps (C, S) float64, -1 padded.
    Writes lrs (C, 1 + max max_iter): the lr at iterations 0..max_iter, NaN where fvcore has no
    value (past max_iter, and at max_iter for kind 2, where fvcore indexes past its list).
MODE "sgd": p.<k> initial parameters, g.<s>.<k> their gradients at step s, group_of (K) int64,
    group_lr, group_wd (G) float64, case (1, 10) and steps (1, S) as above, hyper float64
    [momentum, dampening, nesterov, clip_type (0 none, 1 value, 2 norm), clip_value, norm_type].
    Writes p.<k> after all steps and lrs (num_steps, G), the lr each step used.
"""
import bisect
import math
import sys

import torch

WHERE_EPSILON = 1e-6


class Constant:
    def __init__(self, value):
        self.value = value

    def __call__(self, where):
        if where >= 1.0:
            raise RuntimeError(f"where in ParamScheduler must be in [0, 1]: got {where}")
        return self.value


class Linear:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __call__(self, where):
        return self.end * where + self.start * (1 - where)


class Cosine:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __call__(self, where):
        return self.end + 0.5 * (self.start - self.end) * (1 + math.cos(math.pi * where))


class MultiStep:
    def __init__(self, values, num_updates, milestones):
        self.values, self.num_updates, self.milestones = values, num_updates, milestones

    def __call__(self, where):
        if where > 1.0:
            raise RuntimeError(f"where in ParamScheduler must be in [0, 1]: got {where}")
        epoch_num = int((where + WHERE_EPSILON) * self.num_updates)
        return self.values[bisect.bisect_right(self.milestones, epoch_num)]


class StepWithFixedGamma:
    def __init__(self, base_value, num_decays, gamma, num_updates):
        self.values = [base_value]
        for _ in range(num_decays):
            self.values.append(self.values[-1] * gamma)

    def __call__(self, where):
        return self.values[int((where + WHERE_EPSILON) * len(self.values))]


class Composite:
    def __init__(self, schedulers, lengths, interval_scaling):
        if sum(lengths) != 1.0:
            lengths[-1] = 1.0 - sum(lengths[:-1])
        self.schedulers, self.lengths, self.scaling = schedulers, lengths, interval_scaling

    def __call__(self, where):
        i = 0
        running_total = self.lengths[i]
        while (where + WHERE_EPSILON) > running_total and i < len(self.schedulers) - 1:
            i += 1
            running_total += self.lengths[i]
        scheduler_where = where
        if self.scaling[i] == "rescaled":
            scheduler_start = running_total - self.lengths[i]
            scheduler_where = (where - scheduler_start) / self.lengths[i]
        return self.schedulers[i](scheduler_where)


def warmup(scheduler, warmup_factor, warmup_length, constant, rescale_interval):
    end_value = scheduler(warmup_length)
    start_value = warmup_factor * scheduler(0.0)
    first = Constant(start_value) if constant else Linear(start_value, end_value)
    return Composite([first, scheduler], [warmup_length, 1 - warmup_length],
                     ["rescaled", "rescaled" if rescale_interval else "fixed"])


class LRMultiplier(torch.optim.lr_scheduler._LRScheduler):
    def __init__(self, optimizer, multiplier, max_iter, last_iter=-1):
        self._multiplier = multiplier
        self._max_iter = max_iter
        super().__init__(optimizer, last_epoch=last_iter)

    def get_lr(self):
        multiplier = self._multiplier(self.last_epoch / self._max_iter)
        return [base_lr * multiplier for base_lr in self.base_lrs]


def multiplier_of(row, steps_row):
    kind, max_iter, warmup_iters, factor, constant, rescale, gamma, base_lr, lr_end, decays = row
    kind, max_iter, warmup_iters, decays = int(kind), int(max_iter), int(warmup_iters), int(decays)
    if kind == 0:
        steps = [int(s) for s in steps_row if s >= 0 and s <= max_iter]
        sched = MultiStep([gamma ** k for k in range(len(steps) + 1)], max_iter, steps)
    elif kind == 1:
        sched = Cosine(1, lr_end / base_lr)
    else:
        sched = StepWithFixedGamma(1.0, decays, gamma, max_iter)
    length = min(warmup_iters / max_iter, 1.0)
    return warmup(sched, factor, length, bool(constant), bool(rescale)), max_iter, kind


def schedule(t):
    cases, steps = t["cases"].tolist(), t["steps"].tolist()
    width = 1 + max(int(row[1]) for row in cases)
    out = torch.full((len(cases), width), float("nan"), dtype=torch.float64)
    for c, row in enumerate(cases):
        multiplier, max_iter, kind = multiplier_of(row, steps[c])
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.SGD([p], lr=row[7])
        sched = LRMultiplier(opt, multiplier, max_iter)
        last = max_iter - 1 if kind == 2 else max_iter
        out[c, 0] = opt.param_groups[0]["lr"]
        for it in range(1, last + 1):
            opt.step()
            sched.step()
            out[c, it] = opt.param_groups[0]["lr"]
    return {"lrs": out, "pad": torch.zeros(1)}


def sgd(t):
    num_params = sum(1 for k in t if k.startswith("p."))
    num_steps = sum(1 for k in t if k.startswith("g.")) // num_params
    params = [torch.nn.Parameter(t[f"p.{k}"].clone()) for k in range(num_params)]
    group_of = t["group_of"].tolist()
    group_lr, group_wd = t["group_lr"].tolist(), t["group_wd"].tolist()
    groups = [{"params": [p for k, p in enumerate(params) if group_of[k] == g],
               "lr": group_lr[g], "weight_decay": group_wd[g]} for g in range(len(group_lr))]
    momentum, dampening, nesterov, clip_type, clip_value, norm_type = t["hyper"].tolist()
    opt = torch.optim.SGD(groups, lr=group_lr[0], momentum=momentum, dampening=dampening,
                          nesterov=bool(nesterov))
    multiplier, max_iter, _ = multiplier_of(t["case"][0].tolist(), t["steps"][0].tolist())
    sched = LRMultiplier(opt, multiplier, max_iter)
    lrs = torch.zeros(num_steps, len(groups), dtype=torch.float64)
    for s in range(num_steps):
        for k, p in enumerate(params):
            p.grad = t[f"g.{s}.{k}"].clone()
        for group in opt.param_groups:
            for p in group["params"]:
                if clip_type == 1:
                    torch.nn.utils.clip_grad_value_(p, clip_value)
                elif clip_type == 2:
                    torch.nn.utils.clip_grad_norm_(p, clip_value, norm_type)
        lrs[s] = torch.tensor([g["lr"] for g in opt.param_groups], dtype=torch.float64)
        opt.step()
        sched.step()
    out = {f"p.{k}": p.detach() for k, p in enumerate(params)}
    out["lrs"] = lrs
    return out


def main():
    inputs = torch.load(sys.argv[1], weights_only=False)
    mode = sys.argv[3]
    result = {"schedule": schedule, "sgd": sgd}[mode](inputs)
    torch.save(result, sys.argv[2])


if __name__ == "__main__":
    main()
