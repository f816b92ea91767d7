"""detkit.engine's Python training loop as Detectron2's: SimpleTrainer against a hand-written
loop with the same seed (parameters equal after the steps, each iteration's losses in the
storage), zero_grad_before_forward, gather_metric_period, async metric writing, AMPTrainer in
bfloat16 on CPU against a hand-written autocast loop, a NaN loss; each hook's effect (writer
periods, the timer, LRScheduler's LRs against a twin scheduler and a multiplier formula,
EvalHook's calls, BestCheckpointer's and PeriodicCheckpointer's saves, PreciseBN's statistics
against numpy, TorchProfiler's traces), the trainer's state_dict round trip, setup helpers,
build_model, the logger helpers, and the errors.
Usage: test_engine_loop.py [SHARED SOURCE DETKIT] (unused)."""
import logging
import os
import tempfile

import numpy as np
import torch
from torch import nn

import detkit
from checks import check, finish, raises
from detkit.config import get_cfg
from detkit.engine import (AMPTrainer, DefaultTrainer, SimpleTrainer, default_argument_parser,
                           default_setup, hooks)
from detkit.modeling import META_ARCH_REGISTRY, build_model
from detkit.solver.param_scheduler import MultiStepParamScheduler
from detkit.utils import comm
from detkit.utils.events import EventWriter, get_event_storage
from detkit.utils.logger import log_every_n, log_first_n, setup_logger


class TwoLoss(nn.Module):
    """Two losses from one linear layer; nan_at: the call whose loss is NaN."""

    def __init__(self, nan_at=None):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.calls = 0
        self.nan_at = nan_at
        self.dtypes = []

    def forward(self, batch):
        x, y = batch
        out = self.fc(x)
        self.dtypes.append(out.dtype)
        self.calls += 1
        mse = ((out.float() - y) ** 2).mean()
        if self.nan_at is not None and self.calls - 1 == self.nan_at:
            mse = mse * float("nan")
        return {"loss_mse": mse, "loss_abs": (out.float() - y).abs().mean() * 0.5}


def batches(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(8, 4, generator=g), torch.randn(8, 3, generator=g)) for _ in range(n)]


def make(seed=0, **kw):
    torch.manual_seed(seed)
    model = TwoLoss(**kw)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def max_param_diff(a, b):
    return max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters()))


def hand_loop(steps, autocast_dtype=None):
    model, opt = make()
    totals = []
    for x, y in batches(steps):
        if autocast_dtype is None:
            losses = model((x, y))
        else:
            with torch.autocast("cpu", dtype=autocast_dtype):
                losses = model((x, y))
        total = sum(losses.values())
        totals.append(sum(v.item() for v in losses.values()))
        opt.zero_grad()
        total.backward()
        opt.step()
    return model, totals


def test_simple_trainer():
    steps = 7
    want, totals = hand_loop(steps)
    for before in (False, True):
        model, opt = make()
        trainer = SimpleTrainer(model, batches(steps), opt, zero_grad_before_forward=before)
        trainer.train(0, steps)
        diff = max_param_diff(model, want)
        check(diff == 0.0, f"SimpleTrainer (zero_grad_before_forward={before}) = hand loop "
                           f"after {steps} steps (largest parameter difference {diff})")
    history = trainer.storage.history("total_loss").values()
    gap = max(abs(v - t) for (v, _), t in zip(history, totals))
    check([it for _, it in history] == list(range(steps)) and gap < 1e-6,
          f"total_loss at each iteration = the hand loop's sum of losses (largest gap {gap:.2e})")
    check({"loss_mse", "loss_abs", "data_time", "rank_data_time"} <= set(
        trainer.storage.histories()), "each loss, data_time and rank_data_time in the storage")
    check(trainer.iter == steps, f"iter after train(0, {steps}) is {trainer.iter}")

    model, opt = make()
    trainer = SimpleTrainer(model, batches(10), opt, gather_metric_period=3)
    trainer.train(0, 10)
    its = [it for _, it in trainer.storage.history("total_loss").values()]
    check(its == [2, 5, 8], f"gather_metric_period=3 writes at iterations {its}")

    model, opt = make()
    trainer = SimpleTrainer(model, batches(10), opt, async_write_metrics=True)
    trainer.train(0, 10)
    its = [it for _, it in trainer.storage.history("total_loss").values()]
    check(its == list(range(10)), f"async_write_metrics: every iteration written ({its})")

    model, opt = make()
    trainer = SimpleTrainer(model, batches(3), opt)
    trainer.train(0, 3)
    trainer.reset_data_loader(lambda: batches(2, seed=1))
    trainer.train(0, 2)
    check(model.calls == 5, f"reset_data_loader: the new loader serves ({model.calls} calls)")

    model, opt = make(nan_at=4)
    trainer = SimpleTrainer(model, batches(8), opt)
    raises(FloatingPointError, lambda: trainer.train(0, 8), "iteration=4")


def test_amp():
    steps = 5
    want, _ = hand_loop(steps, torch.bfloat16)
    model, opt = make()
    trainer = AMPTrainer(model, batches(steps), opt, precision=torch.bfloat16)
    trainer.train(0, steps)
    diff = max_param_diff(model, want)
    check(diff == 0.0, f"AMPTrainer bf16 on CPU = hand autocast loop (largest difference {diff})")
    check(set(model.dtypes) == {torch.bfloat16}, f"forward ran in {set(model.dtypes)}")
    check("grad_scaler" in trainer.state_dict(), "AMPTrainer's state_dict has grad_scaler")


class Recorder(EventWriter):
    def __init__(self):
        self.iters, self.closed = [], False

    def write(self):
        self.iters.append(get_event_storage().iter)

    def close(self):
        self.closed = True


class FakeCheckpointer:
    """fvcore's Checkpointer as the hooks use it: writes an empty file per save."""

    def __init__(self, directory):
        self.dir, self.saves = directory, []

    def save(self, name, **extra):
        self.saves.append((name, extra))
        self.last = os.path.join(self.dir, name + ".pth")
        open(self.last, "w").close()

    def get_checkpoint_file(self):
        return self.last


def trained(hook_list, max_iter, trainer_kw=None):
    model, opt = make()
    trainer = SimpleTrainer(model, batches(max_iter), opt, **(trainer_kw or {}))
    trainer.register_hooks(hook_list)
    trainer.train(0, max_iter)
    return trainer, opt


def test_hooks():
    seen = []
    writer = Recorder()
    trained([hooks.CallbackHook(before_step=lambda t: seen.append(t.iter)),
             hooks.PeriodicWriter([writer], period=5)], 12)
    check(seen == list(range(12)), "CallbackHook before_step at each iteration")
    check(writer.iters == [4, 9, 11, 12] and writer.closed,
          f"PeriodicWriter(period=5), 12 iterations: writes at {writer.iters}, then closes")

    trainer, _ = trained([hooks.IterationTimer(warmup_iter=3)], 10)
    n = len(trainer.storage.history("time").values())
    check(n == 8, f"IterationTimer(warmup_iter=3), 10 iterations: {n} times (10 - 3 + 1)")

    model, opt = make()
    twin_opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1)
    twin = torch.optim.lr_scheduler.StepLR(twin_opt, 3, gamma=0.5)
    want = []
    for _ in range(10):
        want.append(twin_opt.param_groups[0]["lr"])
        twin.step()
    sched = torch.optim.lr_scheduler.StepLR(opt, 3, gamma=0.5)
    trainer = SimpleTrainer(model, batches(10), opt)
    trainer.register_hooks([hooks.LRScheduler(scheduler=sched)])
    trainer.train(0, 10)
    got = [v for v, _ in trainer.storage.history("lr").values()]
    check(got == want, f"LRScheduler's lr = a twin StepLR stepped by hand: {got}")
    state = trainer.state_dict()
    check(state["iteration"] == 10 and state["hooks"]["LRScheduler"]["last_epoch"] == 10
          and "optimizer" in state, "state_dict: iteration, optimizer, LRScheduler's state")
    model2, opt2 = make()
    sched2 = torch.optim.lr_scheduler.StepLR(opt2, 3, gamma=0.5)
    other = SimpleTrainer(model2, [], opt2)
    other.register_hooks([hooks.LRScheduler(scheduler=sched2)])
    other.load_state_dict(state)
    check(other.iter == 10 and sched2.last_epoch == 10 and
          opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"],
          f"load_state_dict restores iter, scheduler and lr ({opt2.param_groups[0]['lr']})")

    multi = MultiStepParamScheduler([1.0, 0.1, 0.01], milestones=[4, 8], num_updates=12)
    trainer, _ = trained([hooks.LRScheduler(scheduler=multi)], 12,)
    got = [v for v, _ in trainer.storage.history("lr").values()]
    want = [0.1 * (1.0 if i < 4 else 0.1 if i < 8 else 0.01) for i in range(12)]
    gap = max(abs(a - b) for a, b in zip(got, want))
    check(gap < 1e-12, f"LRScheduler over a ParamScheduler = base lr x multiplier (gap {gap})")

    calls = []
    eval_fn = lambda: calls.append(1) or {"m": {"a": len(calls)}}  # noqa: E731
    trainer, _ = trained([hooks.EvalHook(5, eval_fn)], 12)
    history = trainer.storage.history("m/a").values()
    check(len(calls) == 3 and [it for _, it in history] == [4, 9, 12],
          f"EvalHook(5), 12 iterations: {len(calls)} calls, results at {history} "
          "(the last at iter 12, one past the last step, as Detectron2's)")
    calls.clear()
    trained([hooks.EvalHook(0, eval_fn)], 6)
    check(len(calls) == 1, f"EvalHook(0): only after training ({len(calls)} call)")

    with tempfile.TemporaryDirectory() as d:
        for mode, values, want in (("max", [0.3, 0.4, 0.35, 0.5], [9, 19, 40]),
                                   ("min", [float("nan"), 0.8, 0.9, 0.7], [19, 40])):
            it = iter(values)
            ckpt = FakeCheckpointer(d)
            trained([hooks.EvalHook(10, lambda: {"metric": next(it)}),
                     hooks.BestCheckpointer(10, ckpt, "metric", mode=mode)], 40)
            got = [extra["iteration"] for _, extra in ckpt.saves]
            check(got == want and all(n == "model_best" for n, _ in ckpt.saves),
                  f"BestCheckpointer({mode}) on {values}: saves at {got}")

        ckpt = FakeCheckpointer(d)
        trained([hooks.PeriodicCheckpointer(ckpt, 4, max_to_keep=1)], 10)
        names = [n for n, _ in ckpt.saves]
        left = sorted(os.listdir(d))
        check(names == ["model_0000003", "model_0000007", "model_final"],
              f"PeriodicCheckpointer(4), 10 iterations: {names}")
        check("model_0000003.pth" not in left and "model_0000007.pth" in left,
              f"max_to_keep=1 removes the older periodic file: {left}")

    bn_model = nn.Sequential(nn.BatchNorm1d(3))
    data = [torch.randn(16, 3) * (i + 1) + i for i in range(4)]
    trainer, _ = trained([hooks.PreciseBN(0, bn_model, data, 4)], 2)
    arrays = [b.numpy().astype(np.float64) for b in data]
    want_mean = np.mean([a.mean(0) for a in arrays], axis=0)
    want_var = np.mean([a.var(0, ddof=1) for a in arrays], axis=0)
    gap = max(np.abs(bn_model[0].running_mean.numpy() - want_mean).max(),
              np.abs(bn_model[0].running_var.numpy() - want_var).max())
    check(gap < 1e-4, f"PreciseBN: running stats = numpy's mean of batch stats (gap {gap:.2e})")
    raises(ValueError, lambda: hooks.PreciseBN(0, bn_model, data[:2], 4).update_stats(),
           "stops at 2 iterations")

    with tempfile.TemporaryDirectory() as d:
        trained([hooks.TorchProfiler(lambda t: t.iter in (1, 3), d, save_tensorboard=False)], 4)
        files = sorted(os.listdir(d))
        check(files == ["profiler-trace-iter1.json", "profiler-trace-iter3.json"],
              f"TorchProfiler: traces of the enabled steps {files}")
    trained([hooks.TorchMemoryStats(period=2)], 3)  # on CPU: nothing to log, no error


def test_errors_and_helpers():
    model, opt = make()
    raises(TypeError, lambda: SimpleTrainer(model, [], opt).register_hooks([object()]),
           "not a HookBase")
    raises(ValueError, lambda: hooks.BestCheckpointer(1, None, "m", mode="mean"), "mean")
    raises(ValueError, lambda: SimpleTrainer(model, [], opt, gather_metric_period=0),
           "gather_metric_period")
    class ListModel(nn.Module):
        def forward(self, batch):
            return [batch[0].sum()]

    bad = SimpleTrainer(ListModel(), batches(1), opt)
    raises(TypeError, lambda: bad.train(0, 1), "got list")
    check(comm.gather({"a": 1}) == [{"a": 1}], "comm.gather in a job of one: [data]")

    @META_ARCH_REGISTRY.register()
    class LoopTestArch(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.w = nn.Parameter(torch.zeros(2))

    cfg = get_cfg()
    cfg.MODEL.DEVICE = "cpu"
    cfg.MODEL.META_ARCHITECTURE = "LoopTestArch"
    built = build_model(cfg)
    check(isinstance(built, LoopTestArch) and built.w.device.type == "cpu",
          "build_model: the registered class, on MODEL.DEVICE")
    raises(detkit.Error, lambda: DefaultTrainer(cfg), "LoopTestArch")
    cfg.MODEL.META_ARCHITECTURE = "GeneralizedRCNN"
    check(type(build_model(cfg)).__name__ == "GeneralizedRCNN",
          "build_model of a built-in architecture: detkit's C++ model as an nn.Module")
    cfg.MODEL.META_ARCHITECTURE = "NoSuchArch"
    raises(KeyError, lambda: build_model(cfg), "LoopTestArch")

    with tempfile.TemporaryDirectory() as d:
        cfg = get_cfg()
        cfg.OUTPUT_DIR = os.path.join(d, "out")
        cfg.SEED = 5
        default_setup(cfg, default_argument_parser().parse_args(["--num-gpus", "2"]))
        with open(os.path.join(cfg.OUTPUT_DIR, "config.yaml")) as f:
            check(f.read() == cfg.dump(), "default_setup: config.yaml = cfg.dump()")
        check(torch.initial_seed() == 5, f"default_setup seeds from SEED ({torch.initial_seed()})")
        args = default_argument_parser().parse_args(
            ["--config-file", "a.yaml", "--resume", "SOLVER.BASE_LR", "0.1"])
        check(args.config_file == "a.yaml" and args.resume and
              args.opts == ["SOLVER.BASE_LR", "0.1"], f"default_argument_parser: {args}")

        log_file = os.path.join(d, "log.txt")
        logger = setup_logger(log_file, name="detkit_loop_test")
        for _ in range(5):
            log_first_n(logging.INFO, "first-n", n=2, name="detkit_loop_test")
        for _ in range(7):
            log_every_n(logging.INFO, "every-n", n=3, name="detkit_loop_test")
        for h in logger.handlers:
            h.flush()
        text = open(log_file).read()
        check(text.count("first-n") == 2 and text.count("every-n") == 3,
              f"log_first_n(n=2) x5: {text.count('first-n')}, log_every_n(n=3) x7: "
              f"{text.count('every-n')}")
        raises(ValueError, lambda: log_first_n(logging.INFO, "x", key="where"), "key")


test_simple_trainer()
test_amp()
test_hooks()
test_errors_and_helpers()
finish()
