"""Detectron2's EvalHook: runs an evaluation function every eval_period iterations and after
the last, and puts its (flattened) results into the storage."""
from ..utils import comm
from .train_loop import HookBase


def _flatten_results(results, prefix=""):
    """{"bbox": {"AP": 1}} -> {"bbox/AP": 1}, as Detectron2's flatten_results_dict."""
    flat = {}
    for key, value in results.items():
        if isinstance(value, dict):
            flat.update(_flatten_results(value, prefix + str(key) + "/"))
        else:
            flat[prefix + str(key)] = value
    return flat


class EvalHook(HookBase):
    """eval_function() (no arguments) returns a nested dict of numbers (or None / {}): called
    every eval_period iterations (0: never during training) and, with eval_after_train, after
    the last. Every rank must have the hook (it synchronizes after evaluating)."""

    def __init__(self, eval_period, eval_function, eval_after_train=True):
        self._period = eval_period
        self._func = eval_function
        self._eval_after_train = eval_after_train

    def _do_eval(self):
        results = self._func()
        if results:
            if not isinstance(results, dict):
                raise TypeError(f"Eval function must return a dict. Got {results!r} instead.")
            flat = _flatten_results(results)
            for key, value in flat.items():
                try:
                    float(value)
                except (TypeError, ValueError) as e:
                    raise ValueError("[EvalHook] eval_function should return a nested dict of "
                                     f"float. Got '{key}: {value!r}' instead.") from e
            self.trainer.storage.put_scalars(**flat, smoothing_hint=False)
        # so that no rank runs ahead while another evaluates
        comm.synchronize()

    def after_step(self):
        next_iter = self.trainer.iter + 1
        if self._period > 0 and next_iter % self._period == 0 \
                and next_iter != self.trainer.max_iter:
            self._do_eval()

    def after_train(self):
        if self._eval_after_train and self.trainer.iter + 1 >= self.trainer.max_iter:
            self._do_eval()
        del self._func  # drop what the function holds (e.g. a model, a loader)
