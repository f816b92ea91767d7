"""Detectron2's training loop (detectron2.engine.train_loop): HookBase, and TrainerBase, the loop
from start_iter to max_iter that calls each hook around each run_step(), with an EventStorage
(trainer.storage) entered while it runs. SimpleTrainer and AMPTrainer are in simple_trainer.py."""
import logging
import weakref

from ..utils.events import EventStorage

__all__ = ["HookBase", "TrainerBase"]


class HookBase:
    """Detectron2's HookBase: override before_train, after_train, before_step, after_backward,
    after_step. register_hooks sets self.trainer (a weak proxy to the trainer). A hook with state
    to checkpoint returns it from state_dict() and takes it back in load_state_dict().
    detkit's C++ DefaultTrainer (defaults.py) calls these too: there trainer.iter is the
    iteration running and trainer.storage.latest() every metric's {name: (value, iteration)}."""

    trainer = None

    def before_train(self):
        pass

    def after_train(self):
        pass

    def before_step(self):
        pass

    def after_backward(self):
        pass

    def after_step(self):
        pass

    def state_dict(self):
        return {}


class TrainerBase:
    """A loop with hooks: train(start_iter, max_iter) runs before_step, run_step, after_step for
    each iteration in [start_iter, max_iter); iter, start_iter, max_iter and storage (an
    EventStorage, entered during train()) are its attributes. Subclasses define run_step()."""

    def __init__(self) -> None:
        self._hooks = []
        self.iter = 0
        self.start_iter = 0
        self.max_iter = None
        self.storage = None

    def register_hooks(self, hooks) -> None:
        """Hooks run in the order registered; None entries are skipped."""
        hooks = [h for h in hooks if h is not None]
        for h in hooks:
            if not isinstance(h, HookBase):
                raise TypeError(f"register_hooks: {h!r} is not a HookBase")
            h.trainer = weakref.proxy(self)
        self._hooks.extend(hooks)

    def train(self, start_iter: int, max_iter: int):
        logger = logging.getLogger(__name__)
        logger.info(f"Starting training from iteration {start_iter}")
        self.iter = self.start_iter = start_iter
        self.max_iter = max_iter
        with EventStorage(start_iter) as self.storage:
            try:
                self.before_train()
                for self.iter in range(start_iter, max_iter):
                    self.before_step()
                    self.run_step()
                    self.after_step()
                # after the loop, iter is one past the last step run, as Detectron2's
                self.iter += 1
            except Exception:
                logger.exception("Exception during training:")
                raise
            finally:
                self.after_train()

    def before_train(self):
        for h in self._hooks:
            h.before_train()

    def after_train(self):
        self.storage.iter = self.iter
        for h in self._hooks:
            h.after_train()

    def before_step(self):
        # the storage's iteration is the one whose step runs next
        self.storage.iter = self.iter
        for h in self._hooks:
            h.before_step()

    def after_backward(self):
        for h in self._hooks:
            h.after_backward()

    def after_step(self):
        for h in self._hooks:
            h.after_step()

    def run_step(self):
        raise NotImplementedError(f"{type(self).__name__} must define run_step()")

    def state_dict(self):
        """{"iteration": iter} and, under "hooks", each stateful hook's state by its class's
        qualname (the first hook of a class only)."""
        state = {"iteration": self.iter}
        hooks_state = {}
        for h in self._hooks:
            hook_state = h.state_dict()
            name = type(h).__qualname__
            if hook_state and name not in hooks_state:
                hooks_state[name] = hook_state
        if hooks_state:
            state["hooks"] = hooks_state
        return state

    def load_state_dict(self, state_dict):
        logger = logging.getLogger(__name__)
        self.iter = state_dict["iteration"]
        for key, value in state_dict.get("hooks", {}).items():
            for h in self._hooks:
                if type(h).__qualname__ == key:
                    h.load_state_dict(value)
                    break
            else:
                logger.warning(f"Cannot find the hook '{key}', its state_dict is ignored.")
