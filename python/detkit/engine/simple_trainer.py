"""Detectron2's SimpleTrainer (one model, one loader, one optimizer: each step a forward giving a
loss dict, a backward, an optimizer step, the losses written to the storage) and AMPTrainer
(the same under torch.autocast with a GradScaler)."""
import concurrent.futures
import logging
import time

import numpy as np
import torch
from torch.nn.parallel import DataParallel, DistributedDataParallel

from ..utils import comm
from ..utils.events import get_event_storage
from .train_loop import TrainerBase

__all__ = ["AMPTrainer", "SimpleTrainer"]


def _sum_losses(loss_dict):
    """(the loss to backpropagate, the dict of losses): a bare tensor counts as total_loss."""
    if isinstance(loss_dict, torch.Tensor):
        return loss_dict, {"total_loss": loss_dict}
    if not isinstance(loss_dict, dict) or not loss_dict:
        raise TypeError("the model must return a loss tensor or a non-empty dict of losses, "
                        f"got {type(loss_dict).__name__}")
    return sum(loss_dict.values()), loss_dict


class SimpleTrainer(TrainerBase):
    """model(data) for data from data_loader must return a dict of scalar losses (or one loss
    tensor); their sum is minimized with optimizer. gather_metric_period: the losses are
    gathered and written every that many steps; zero_grad_before_forward: zero the gradients
    before the forward rather than after it; async_write_metrics: write them on a worker
    thread."""

    def __init__(self, model, data_loader, optimizer, gather_metric_period=1,
                 zero_grad_before_forward=False, async_write_metrics=False):
        super().__init__()
        if gather_metric_period < 1:
            raise ValueError(f"gather_metric_period must be >= 1, got {gather_metric_period}")
        model.train()
        self.model = model
        self.data_loader = data_loader
        self._data_loader_iter_obj = None
        self.optimizer = optimizer
        self.gather_metric_period = gather_metric_period
        self.zero_grad_before_forward = zero_grad_before_forward
        self.async_write_metrics = async_write_metrics
        self.concurrent_executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def _next_data(self):
        start = time.perf_counter()
        data = next(self._data_loader_iter)
        return data, time.perf_counter() - start

    def run_step(self):
        assert self.model.training, "[SimpleTrainer] model was changed to eval mode!"
        data, data_time = self._next_data()
        if self.zero_grad_before_forward:
            self.optimizer.zero_grad()
        losses, loss_dict = _sum_losses(self.model(data))
        if not self.zero_grad_before_forward:
            self.optimizer.zero_grad()
        losses.backward()
        self.after_backward()
        self._submit_metrics(loss_dict, data_time)
        self.optimizer.step()

    def _submit_metrics(self, loss_dict, data_time):
        if self.async_write_metrics:
            self.concurrent_executor.submit(self._write_metrics, loss_dict, data_time,
                                            iter=self.iter)
        else:
            self._write_metrics(loss_dict, data_time)

    @property
    def _data_loader_iter(self):
        if self._data_loader_iter_obj is None:
            self._data_loader_iter_obj = iter(self.data_loader)
        return self._data_loader_iter_obj

    def reset_data_loader(self, data_loader_builder):
        """Replaces the loader with data_loader_builder() (called without arguments)."""
        del self.data_loader
        self.data_loader = data_loader_builder()
        self._data_loader_iter_obj = None

    def _write_metrics(self, loss_dict, data_time, prefix="", iter=None):
        iteration = self.iter if iter is None else iter
        if (iteration + 1) % self.gather_metric_period == 0:
            try:
                SimpleTrainer.write_metrics(loss_dict, data_time, iteration, prefix)
            except Exception:
                logging.getLogger(__name__).exception("Exception in writing metrics: ")
                raise

    @staticmethod
    def write_metrics(loss_dict, data_time, cur_iter, prefix=""):
        """Puts rank_data_time, then on the main process data_time (the slowest rank's),
        {prefix}total_loss (the sum of the ranks' mean losses) and each loss (when more than
        one) at cur_iter. A non-finite total is a FloatingPointError naming the iteration."""
        metrics = {k: v.detach().cpu().item() for k, v in loss_dict.items()}
        metrics["data_time"] = data_time
        storage = get_event_storage()
        storage.put_scalar("rank_data_time", data_time, cur_iter=cur_iter)
        all_metrics = comm.gather(metrics)
        if not comm.is_main_process():
            return
        data_time = np.max([m.pop("data_time") for m in all_metrics])
        storage.put_scalar("data_time", data_time, cur_iter=cur_iter)
        metrics = {k: np.mean([m[k] for m in all_metrics]) for k in all_metrics[0]}
        total = sum(metrics.values())
        if not np.isfinite(total):
            raise FloatingPointError(f"the losses are not finite at iteration={cur_iter}: "
                                     f"{metrics}")
        storage.put_scalar(f"{prefix}total_loss", total, cur_iter=cur_iter)
        if len(metrics) > 1:
            storage.put_scalars(cur_iter=cur_iter, **metrics)

    def state_dict(self):
        state = super().state_dict()
        state["optimizer"] = self.optimizer.state_dict()
        return state

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.optimizer.load_state_dict(state_dict["optimizer"])

    def after_train(self):
        super().after_train()
        self.concurrent_executor.shutdown(wait=True)


class AMPTrainer(SimpleTrainer):
    """SimpleTrainer with the forward under torch.autocast(precision) on the model's device
    type and the backward through grad_scaler (default: a torch.amp.GradScaler for that device,
    disabled on CPU where it has nothing to do). Unlike Detectron2's it runs on CPU too (use
    precision=torch.bfloat16 there). log_grad_scaler: put [metric]grad_scaler each step."""

    def __init__(self, model, data_loader, optimizer, gather_metric_period=1,
                 zero_grad_before_forward=False, grad_scaler=None,
                 precision: torch.dtype = torch.float16, log_grad_scaler: bool = False,
                 async_write_metrics=False):
        unsupported = "AMPTrainer does not support single-process multi-device training!"
        if isinstance(model, DistributedDataParallel):
            assert not (model.device_ids and len(model.device_ids) > 1), unsupported
        assert not isinstance(model, DataParallel), unsupported
        super().__init__(model, data_loader, optimizer, gather_metric_period,
                         zero_grad_before_forward, async_write_metrics)
        self._device_type = _device_type_of(model)
        if grad_scaler is None:
            grad_scaler = torch.amp.GradScaler(self._device_type,
                                               enabled=self._device_type == "cuda")
        self.grad_scaler = grad_scaler
        self.precision = precision
        self.log_grad_scaler = log_grad_scaler

    def run_step(self):
        assert self.model.training, "[AMPTrainer] model was changed to eval mode!"
        data, data_time = self._next_data()
        if self.zero_grad_before_forward:
            self.optimizer.zero_grad()
        with torch.autocast(device_type=self._device_type, dtype=self.precision):
            losses, loss_dict = _sum_losses(self.model(data))
        if not self.zero_grad_before_forward:
            self.optimizer.zero_grad()
        self.grad_scaler.scale(losses).backward()
        if self.log_grad_scaler:
            get_event_storage().put_scalar("[metric]grad_scaler", self.grad_scaler.get_scale())
        self.after_backward()
        self._submit_metrics(loss_dict, data_time)
        self.grad_scaler.step(self.optimizer)
        self.grad_scaler.update()

    def state_dict(self):
        state = super().state_dict()
        state["grad_scaler"] = self.grad_scaler.state_dict()
        return state

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.grad_scaler.load_state_dict(state_dict["grad_scaler"])


def _device_type_of(model):
    for tensor in model.parameters():
        return tensor.device.type
    return "cuda" if torch.cuda.is_available() else "cpu"
