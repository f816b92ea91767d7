"""detkit.solver (Detectron2's optimizer and LR schedules from SOLVER.*) against values computed
independently: each schedule's LR at every iteration against its closed-form formula and against
torch.optim's own schedulers (LinearLR x MultiStepLR, CosineAnnealingLR); the param groups
build_optimizer makes; gradient clipping; the errors, naming the key or argument.
Usage: test_solver.py [SHARED SOURCE DETKIT] (unused)."""
import math
from bisect import bisect_right

import torch
from torch import nn

from checks import check, finish, raises
from detkit.config import get_cfg
from detkit.solver import (LRMultiplier, WarmupCosineLR, WarmupMultiStepLR, WarmupParamScheduler,
                           build_lr_scheduler, build_optimizer, get_default_optimizer_params)
from detkit.solver.param_scheduler import (CosineParamScheduler, MultiStepParamScheduler,
                                           StepWithFixedGammaParamScheduler)


def lrs_of(scheduler, optimizer, steps):
    """The LR of group 0 at iterations 0 .. steps-1 (scheduler.step() between them)."""
    out = [optimizer.param_groups[0]["lr"]]
    for _ in range(steps - 1):
        optimizer.step()
        scheduler.step()
        out.append(optimizer.param_groups[0]["lr"])
    return out


def sgd(lr):
    return torch.optim.SGD([nn.Parameter(torch.zeros(2))], lr=lr, momentum=0.9)


def close(a, b, tol=1e-9):
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


def config(**solver):
    cfg = get_cfg()
    for key, value in solver.items():
        setattr(cfg.SOLVER, key, value)
    return cfg


# WarmupMultiStepLR from the config: base * (f + (1 - f) * i / W) for i < W, * gamma^(steps <= i)
cfg = config(BASE_LR=0.02, MAX_ITER=90, STEPS=(40, 70, 200), GAMMA=0.1, WARMUP_ITERS=10,
             WARMUP_FACTOR=0.001)
opt = sgd(0.02)
got = lrs_of(build_lr_scheduler(cfg, opt), opt, 90)
formula = [0.02 * (0.001 + 0.999 * i / 10 if i < 10 else 1.0) * 0.1 ** bisect_right([40, 70], i)
           for i in range(90)]
check(close(got, formula), "WarmupMultiStepLR (config): the closed-form LR at every iteration")
opt_t = sgd(0.02)
torch_sched = torch.optim.lr_scheduler.ChainedScheduler([
    torch.optim.lr_scheduler.LinearLR(opt_t, start_factor=0.001, total_iters=10),
    torch.optim.lr_scheduler.MultiStepLR(opt_t, milestones=[40, 70], gamma=0.1)])
check(close(got, lrs_of(torch_sched, opt_t, 90)), "WarmupMultiStepLR equals torch's LinearLR x "
      "MultiStepLR")
opt = sgd(0.02)
legacy = WarmupMultiStepLR(opt, milestones=[40, 70], gamma=0.1, warmup_factor=0.001,
                           warmup_iters=10)
check(close(lrs_of(legacy, opt, 90), formula), "WarmupMultiStepLR (the class): the same LRs")

# WarmupCosineLR: cosine from BASE_LR to BASE_LR_END over MAX_ITER; the warm-up linear from
# BASE_LR * factor to the cosine's value where it ends
cfg = config(LR_SCHEDULER_NAME="WarmupCosineLR", BASE_LR=0.5, BASE_LR_END=0.05, MAX_ITER=100,
             WARMUP_ITERS=20, WARMUP_FACTOR=0.1)
opt = sgd(0.5)
got = lrs_of(build_lr_scheduler(cfg, opt), opt, 101)


def cosine(i):
    return 0.05 + (0.5 - 0.05) * (1 + math.cos(math.pi * i / 100)) / 2


formula = [0.05 + (cosine(20) - 0.05) * i / 20 if i < 20 else cosine(i) for i in range(101)]
formula[:20] = [0.5 * 0.1 + (cosine(20) - 0.5 * 0.1) * i / 20 for i in range(20)]
check(close(got, formula), "WarmupCosineLR (config): the closed-form LR, ending at BASE_LR_END")
check(abs(got[-1] - 0.05) < 1e-12, f"WarmupCosineLR ends at BASE_LR_END: {got[-1]}")
cfg = config(LR_SCHEDULER_NAME="WarmupCosineLR", BASE_LR=0.5, BASE_LR_END=0.05, MAX_ITER=100,
             WARMUP_ITERS=0)
opt, opt_t = sgd(0.5), sgd(0.5)
check(close(lrs_of(build_lr_scheduler(cfg, opt), opt, 100),
            lrs_of(torch.optim.lr_scheduler.CosineAnnealingLR(opt_t, 100, eta_min=0.05), opt_t,
                   100), 1e-7), "WarmupCosineLR without warm-up equals torch's CosineAnnealingLR")
opt = sgd(2.0)
legacy = WarmupCosineLR(opt, max_iters=50, warmup_factor=0.01, warmup_iters=5)
check(close(lrs_of(legacy, opt, 50),
            [2.0 * (0.01 + 0.99 * i / 5 if i < 5 else 1) * (1 + math.cos(math.pi * i / 50)) / 2
             for i in range(50)]), "WarmupCosineLR (the class): its closed form")

# WarmupStepWithFixedGammaLR: NUM_DECAYS + 1 equal parts; constant warm-up; rescaled interval
cfg = config(LR_SCHEDULER_NAME="WarmupStepWithFixedGammaLR", BASE_LR=1.0, MAX_ITER=40,
             NUM_DECAYS=3, GAMMA=0.5, WARMUP_ITERS=8, WARMUP_FACTOR=0.1, WARMUP_METHOD="constant",
             RESCALE_INTERVAL=True)
opt = sgd(1.0)
got = lrs_of(build_lr_scheduler(cfg, opt), opt, 40)
formula = [0.1 if i < 8 else 0.5 ** int((i - 8) / 32 * 4 + 1e-6) for i in range(40)]
check(close(got, formula), "WarmupStepWithFixedGammaLR, constant warm-up, rescaled: its formula")

# the schedules by hand, LRMultiplier on two groups (each its own base LR)
p1, p2 = nn.Parameter(torch.zeros(1)), nn.Parameter(torch.zeros(1))
opt = torch.optim.SGD([{"params": [p1], "lr": 1.0}, {"params": [p2], "lr": 3.0}], lr=1.0)
sched = LRMultiplier(opt, WarmupParamScheduler(MultiStepParamScheduler([1, 0.1], num_updates=10),
                                               0.5, 0.2), max_iter=10)
group2 = []
for _ in range(10):
    group2.append(opt.param_groups[1]["lr"])
    opt.step()
    sched.step()
check(close(group2, [1.5, 2.25] + [3.0] * 3 + [0.3] * 5),
      "LRMultiplier: each group's LR times the multiplier (warm-up 0.5 -> 1 over 2 of 10)")
check(sched.state_dict() == {"base_lrs": [1.0, 3.0], "last_epoch": 10}, "LRMultiplier.state_dict")
check(abs(CosineParamScheduler(1, 0)(0.5) - 0.5) < 1e-15 and
      StepWithFixedGammaParamScheduler(1.0, 2, 0.1, 30)(0.7) == 0.1 ** 2,
      "CosineParamScheduler, StepWithFixedGammaParamScheduler values")
raises(IndexError, lambda: StepWithFixedGammaParamScheduler(1.0, 2, 0.1, 30)(1.0), "past")

# errors name the key or argument
raises(ValueError, lambda: build_lr_scheduler(config(LR_SCHEDULER_NAME="Poly"), sgd(1)),
       "SOLVER.LR_SCHEDULER_NAME")
raises(ValueError, lambda: build_lr_scheduler(config(WARMUP_METHOD="cubic"), sgd(1)),
       "SOLVER.WARMUP_METHOD")
raises(ValueError, lambda: build_lr_scheduler(config(LR_SCHEDULER_NAME="WarmupCosineLR",
                                                     BASE_LR=0.1, BASE_LR_END=0.2), sgd(1)),
       "SOLVER.BASE_LR_END")
raises(ValueError, lambda: build_lr_scheduler(config(MAX_ITER=100, STEPS=(100,)), sgd(1)),
       "milestones")
raises(ValueError, lambda: LRMultiplier(sgd(1), 0.5, 10), "multiplier")
raises(ValueError, lambda: MultiStepParamScheduler([1, 0.1, 0.01], num_updates=10,
                                                   milestones=[5]), "milestones")


# param groups: norm layers' weight decay, then biases' LR and weight decay (applied last, so a
# norm layer's bias too); a shared parameter once, a frozen one not at all
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)
        self.fc_again = self.fc  # shared: one group entry
        self.frozen = nn.Linear(2, 2)
        self.frozen.requires_grad_(False)


net = Net()
groups = get_default_optimizer_params(net, base_lr=0.1, weight_decay=1e-4, weight_decay_norm=0.0,
                                      bias_lr_factor=2.0, weight_decay_bias=1e-5)
by_params = {tuple(id(p) for p in g["params"]): {k: v for k, v in g.items() if k != "params"}
             for g in groups}
ids = lambda *ps: tuple(id(p) for p in ps)  # noqa: E731
check(by_params == {
    ids(net.conv.weight, net.fc.weight): {"lr": 0.1, "weight_decay": 1e-4},
    ids(net.conv.bias, net.bn.bias, net.fc.bias): {"lr": 0.2, "weight_decay": 1e-5},
    ids(net.bn.weight): {"lr": 0.1, "weight_decay": 0.0}}, f"param groups: {by_params}")
raises(ValueError, lambda: get_default_optimizer_params(net, bias_lr_factor=2.0), "base_lr")

cfg = config(BASE_LR=0.1, MOMENTUM=0.9, WEIGHT_DECAY=0.0, WEIGHT_DECAY_NORM=0.0)
cfg.SOLVER.CLIP_GRADIENTS.ENABLED = True
cfg.SOLVER.CLIP_GRADIENTS.CLIP_TYPE = "value"
cfg.SOLVER.CLIP_GRADIENTS.CLIP_VALUE = 0.01
model = nn.Linear(3, 1)
optimizer = build_optimizer(cfg, model)
check(isinstance(optimizer, torch.optim.SGD) and optimizer.defaults["momentum"] == 0.9,
      f"build_optimizer: SGD with SOLVER.MOMENTUM ({type(optimizer).__name__})")
before = model.weight.detach().clone()
(model(torch.full((1, 3), 100.0)).sum()).backward()  # gradient 100 per weight, clipped to 0.01
optimizer.step()
check(torch.allclose(before - model.weight.detach(), torch.full_like(before, 0.1 * 0.01)),
      "SOLVER.CLIP_GRADIENTS by value: the step uses the clipped gradient")
cfg.SOLVER.CLIP_GRADIENTS.CLIP_TYPE = "max"
raises(ValueError, lambda: build_optimizer(cfg, model), "SOLVER.CLIP_GRADIENTS.CLIP_TYPE")
finish()
