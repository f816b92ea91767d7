#!/usr/bin/env python3
"""Hooks written in Python (Detectron2's HookBase) in detkit's DefaultTrainer: they run after
every step with trainer.iter and trainer.storage.latest() (trainer.storage is
get_event_storage() during train()); an exception one raises ends train()
and reaches the caller; Ctrl-C (SIGINT, sent here by a hook to its own process at a known step)
lets the step finish, saves its checkpoint and raises detkit.Preempted, a KeyboardInterrupt, as
`detkit train` exits 75; resume_or_load(resume=True) then continues at the next iteration.
Usage: test_trainer_hooks.py SHARED SOURCE DETKIT"""
import os
import signal
import sys

import detkit
from detkit.config import get_cfg
from detkit.data import register_coco_instances
from detkit.engine import DefaultTrainer, HookBase
from detkit.utils.events import get_event_storage, has_event_storage
from small_shapes import small_shapes

shared, source, detkit_binary = sys.argv[1:4]
work = small_shapes(detkit_binary, "python_trainer_hooks", train=6, val=2, seed=4)
register_coco_instances("hook_shapes", {}, f"{work}/shapes/annotations/instances_train.json",
                        f"{work}/shapes/train")


def config(max_iter, output):
    cfg = get_cfg()
    cfg.merge_from_file(f"{source}/configs/quick/mask_rcnn_R_18_FPN_shapes.yaml")
    cfg.merge_from_list(["SOLVER.IMS_PER_BATCH", "2", "INPUT.MIN_SIZE_TRAIN", "(64,)",
                         "INPUT.MAX_SIZE_TRAIN", "96", "DATALOADER.NUM_WORKERS", "1", "SEED", "3",
                         "SOLVER.CHECKPOINT_PERIOD", "1000", "DATASETS.TEST", "()"])
    cfg.DATASETS.TRAIN = ("hook_shapes",)
    cfg.SOLVER.MAX_ITER = max_iter
    cfg.OUTPUT_DIR = f"{work}/{output}"
    return cfg


class Recorder(HookBase):
    def __init__(self):
        self.seen = []

    def before_train(self):
        self.seen.append("before_train")

    def after_step(self):
        storage = get_event_storage()  # Detectron2's hooks read the trainer's storage so
        assert storage is self.trainer.storage and storage.iter == self.trainer.iter, storage
        latest = storage.latest()
        self.seen.append((self.trainer.iter, latest["total_loss"][1], latest["total_loss"][0]))

    def after_train(self):
        self.seen.append("after_train")


trainer = DefaultTrainer(config(3, "recorded"))
trainer.resume_or_load(resume=False)
recorder = Recorder()
trainer.register_hooks([recorder])
trainer.train()
print("hook saw:", recorder.seen)
assert recorder.seen[0] == "before_train" and recorder.seen[-1] == "after_train"
steps = recorder.seen[1:-1]
assert [s[0] for s in steps] == [0, 1, 2] and all(s[0] == s[1] for s in steps), steps
assert all(s[2] > 0 for s in steps)
assert not has_event_storage(), "the trainer's storage is left when train() returns"


class Fails(HookBase):
    def after_step(self):
        if self.trainer.iter == 1:
            raise ValueError("a hook's own error at iteration 1")


trainer = DefaultTrainer(config(5, "failing"))
trainer.resume_or_load(resume=False)
trainer.register_hooks([Fails()])
try:
    trainer.train()
    raise AssertionError("the hook's error did not end train()")
except ValueError as e:
    print("hook error reached the caller:", e)


class CtrlC(HookBase):
    def __init__(self, at):
        self.at, self.first = at, None

    def after_step(self):
        if self.first is None:
            self.first = self.trainer.iter
        if self.trainer.iter == self.at:
            os.kill(os.getpid(), signal.SIGINT)


trainer = DefaultTrainer(config(1000, "interrupted"))
trainer.resume_or_load(resume=False)
trainer.register_hooks([CtrlC(at=2)])
try:
    trainer.train()
    raise AssertionError("SIGINT did not stop training")
except detkit.Preempted as e:
    assert isinstance(e, KeyboardInterrupt)
    print("Ctrl-C:", e)
    assert "SIGINT after iteration 2" in str(e), str(e)
assert open(f"{work}/interrupted/last_checkpoint").read().strip() == "model_0000002.pth"
resumed = DefaultTrainer(config(5, "interrupted"))
resumed.resume_or_load(resume=True)
hook = CtrlC(at=-1)
resumed.register_hooks([hook])
resumed.train()
assert hook.first == 3, f"the resumed run started at iteration {hook.first}, not 3"
print("resumed at iteration", hook.first)
print("Python hooks, errors and Ctrl-C: all checks passed")
