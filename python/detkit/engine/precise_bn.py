"""Detectron2's PreciseBN hook, with fvcore's get_bn_modules / update_bn_stats written here:
replaces each training BatchNorm's running mean and variance by their average over num_iter
batches (each batch's statistics weighted equally)."""
import itertools
import logging

import torch

from ..utils.events import EventStorage
from .train_loop import HookBase

_BN_TYPES = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d,
             torch.nn.SyncBatchNorm)


def get_bn_modules(model):
    """The BatchNorm modules of model that are in training mode."""
    return [m for m in model.modules() if m.training and isinstance(m, _BN_TYPES)]


@torch.no_grad()
def update_bn_stats(model, data_loader, num_iters=200):
    """Runs model(batch) for num_iters batches of data_loader and sets each training BN's
    running_mean / running_var to the mean of the batches' statistics. A loader that ends
    sooner is a ValueError naming both counts."""
    bn_layers = get_bn_modules(model)
    if not bn_layers:
        return
    momenta = [bn.momentum for bn in bn_layers]
    for bn in bn_layers:
        bn.momentum = 1.0  # the running stats become this batch's own
    means = [torch.zeros_like(bn.running_mean) for bn in bn_layers]
    variances = [torch.zeros_like(bn.running_var) for bn in bn_layers]
    done = 0
    try:
        for batch in itertools.islice(data_loader, num_iters):
            model(batch)
            done += 1
            for i, bn in enumerate(bn_layers):
                means[i] += (bn.running_mean - means[i]) / done
                variances[i] += (bn.running_var - variances[i]) / done
        if done != num_iters:
            raise ValueError(f"update_bn_stats is meant to run for {num_iters} iterations, "
                             f"but the data loader stops at {done} iterations.")
        for bn, mean, var in zip(bn_layers, means, variances):
            bn.running_mean.copy_(mean)
            bn.running_var.copy_(var)
    finally:
        for bn, momentum in zip(bn_layers, momenta):
            bn.momentum = momentum


class PreciseBN(HookBase):
    """Every `period` iterations (0: only at the end) and after the last, update_bn_stats over
    num_iter batches of data_loader. A model without training BN layers disables it."""

    def __init__(self, period, model, data_loader, num_iter):
        self._logger = logging.getLogger(__name__)
        self._disabled = not get_bn_modules(model)
        if self._disabled:
            self._logger.info("PreciseBN is disabled because model does not contain BN layers "
                              "in training mode.")
            return
        self._model = model
        self._data_loader = data_loader
        self._num_iter = num_iter
        self._period = period
        self._data_iter = None

    def after_step(self):
        next_iter = self.trainer.iter + 1
        if next_iter == self.trainer.max_iter or \
                (self._period > 0 and next_iter % self._period == 0):
            self.update_stats()

    def update_stats(self):
        """Updates the BN statistics now (also callable by hand)."""
        if self._disabled:
            return
        if self._data_iter is None:
            self._data_iter = iter(self._data_loader)
        with EventStorage():  # the model's events during precise BN are discarded
            self._logger.info(f"Running precise-BN for {self._num_iter} iterations...  "
                              "Note that this could produce different statistics every time.")
            update_bn_stats(self._model, self._data_iter, self._num_iter)
