"""Detectron2's event storage and writers (detectron2.utils.events): EventStorage records the
scalars (and images, histograms) a training loop puts each iteration; writers (JSONWriter:
metrics.json, CommonMetricPrinter: the console line, TensorboardXWriter) read the storage
currently entered (get_event_storage()).

detkit's own trainer (detkit.engine.DefaultTrainer, `detkit train`) keeps its storage in C++ and
writes the same metrics.json itself; during its train() the storage entered is that trainer's
(trainer.storage, detkit.engine.TrainerStorage): the same reading methods over the C++ one. This
Python EventStorage is for loops written in Python, as Detectron2's."""
import datetime
import json
import logging
import os
import time
from collections import defaultdict
from contextlib import contextmanager
from typing import Optional

import torch

from .history_buffer import HistoryBuffer

__all__ = ["CommonMetricPrinter", "EventStorage", "EventWriter", "JSONWriter",
           "TensorboardXWriter", "get_event_storage", "has_event_storage"]

_CURRENT_STORAGE_STACK = []


def get_event_storage():
    """The storage entered last (`with EventStorage() as storage:`, or a detkit trainer's during
    train()). Outside one: an AssertionError saying so, as Detectron2's."""
    if not _CURRENT_STORAGE_STACK:
        raise AssertionError(
            "get_event_storage() has to be called inside a 'with EventStorage(...)' context!")
    return _CURRENT_STORAGE_STACK[-1]


def has_event_storage():
    return bool(_CURRENT_STORAGE_STACK)


@contextmanager
def _entered(storage):
    """Makes `storage` the one get_event_storage() returns, until the block ends."""
    _CURRENT_STORAGE_STACK.append(storage)
    try:
        yield storage
    finally:
        if not _CURRENT_STORAGE_STACK or _CURRENT_STORAGE_STACK[-1] is not storage:
            raise RuntimeError("event storages must be left in the order they were entered")
        _CURRENT_STORAGE_STACK.pop()


class EventStorage:
    """Scalars by name, each a HistoryBuffer of (value, iteration) with a smoothing hint (whether
    writers show the median of recent values or the latest one); images and histograms for
    TensorBoard. `with EventStorage(start_iter) as storage:` makes it get_event_storage()'s."""

    def __init__(self, start_iter=0):
        self._history = defaultdict(HistoryBuffer)
        self._smoothing_hints = {}
        self._latest_scalars = {}
        self._iter = int(start_iter)
        self._current_prefix = ""
        self._vis_data = []
        self._histograms = []
        self._context = None

    def put_scalar(self, name, value, smoothing_hint=True, cur_iter=None):
        """Records float(value) under name (prefixed by the name_scope) at cur_iter (default: the
        current iteration). A name put before with the other smoothing hint is an error."""
        name = self._current_prefix + name
        cur_iter = self._iter if cur_iter is None else int(cur_iter)
        value = float(value)
        hint = self._smoothing_hints.setdefault(name, smoothing_hint)
        if hint != smoothing_hint:
            raise AssertionError(f"Scalar {name} was put with a different smoothing_hint!")
        self._history[name].update(value, cur_iter)
        self._latest_scalars[name] = (value, cur_iter)

    def put_scalars(self, *, smoothing_hint=True, cur_iter=None, **kwargs):
        """storage.put_scalars(loss=..., accuracy=...)."""
        for name, value in kwargs.items():
            self.put_scalar(name, value, smoothing_hint=smoothing_hint, cur_iter=cur_iter)

    def put_image(self, img_name, img_tensor):
        """An RGB image (3, H, W), float in [0, 1] or uint8, for TensorBoard, at this iteration."""
        self._vis_data.append((img_name, img_tensor, self._iter))

    def put_histogram(self, hist_name, hist_tensor, bins=1000):
        """A histogram of hist_tensor's values in `bins` equal bins between its min and max, as
        TensorBoard's add_histogram_raw takes it."""
        low, high = hist_tensor.min().item(), hist_tensor.max().item()
        counts = torch.histc(hist_tensor, bins=bins)
        edges = torch.linspace(low, high, steps=bins + 1, dtype=torch.float32)
        self._histograms.append(dict(
            tag=hist_name, min=low, max=high, num=len(hist_tensor), sum=float(hist_tensor.sum()),
            sum_squares=float(torch.sum(hist_tensor**2)), bucket_limits=edges[1:].tolist(),
            bucket_counts=counts.tolist(), global_step=self._iter))

    def history(self, name):
        """The HistoryBuffer of name; a KeyError naming it when nothing was put under it."""
        buffer = self._history.get(name)
        if buffer is None:
            raise KeyError(f"No history metric available for {name}!")
        return buffer

    def histories(self):
        return self._history

    def latest(self):
        """{name: (latest value, the iteration it was put at)}."""
        return self._latest_scalars

    def latest_with_smoothing_hint(self, window_size=20):
        """As latest(), with the median of the values put in the last window_size iterations for
        the names with the smoothing hint."""
        return {name: (self._history[name].median(self.count_samples(name, window_size))
                       if self._smoothing_hints[name] else value, itr)
                for name, (value, itr) in self._latest_scalars.items()}

    def count_samples(self, name, window_size=20):
        """How many values of name were put in the window_size iterations up to its latest."""
        values = self.history(name).values()
        newest = values[-1][1]
        count = 0
        for _, itr in reversed(values):
            if itr <= newest - window_size:
                break
            count += 1
        return count

    def smoothing_hints(self):
        return self._smoothing_hints

    def step(self):
        """Moves to the next iteration (or set storage.iter)."""
        self._iter += 1

    @property
    def iter(self):
        return self._iter

    @iter.setter
    def iter(self, val):
        self._iter = int(val)

    @property
    def iteration(self):
        return self._iter

    def __enter__(self):
        self._context = _entered(self)
        return self._context.__enter__()

    def __exit__(self, exc_type, exc_val, exc_tb):
        context, self._context = self._context, None
        return context.__exit__(exc_type, exc_val, exc_tb)

    @contextmanager
    def name_scope(self, name):
        """Inside, every name put is prefixed by "name/"."""
        old_prefix = self._current_prefix
        self._current_prefix = name.rstrip("/") + "/"
        try:
            yield
        finally:
            self._current_prefix = old_prefix

    def clear_images(self):
        self._vis_data = []

    def clear_histograms(self):
        self._histograms = []


class EventWriter:
    """A writer of the current storage's events: write() each period, close() at the end."""

    def write(self):
        raise NotImplementedError(f"{type(self).__name__} must implement write()")

    def close(self):
        pass


class JSONWriter(EventWriter):
    """Appends one JSON object a line to json_file: each iteration's scalars put since the last
    write, smoothed ones as the median over window_size iterations, with "iteration" (the
    metrics.json detkit train writes)."""

    def __init__(self, json_file, window_size=20):
        self._file_handle = open(json_file, "a")
        self._window_size = window_size
        self._last_write = -1

    def write(self):
        storage = get_event_storage()
        by_iter = defaultdict(dict)
        for name, (value, itr) in storage.latest_with_smoothing_hint(self._window_size).items():
            if itr > self._last_write:
                by_iter[itr][name] = value
        if by_iter:
            self._last_write = max(by_iter)
        for itr, scalars in by_iter.items():
            scalars["iteration"] = itr
            self._file_handle.write(json.dumps(scalars, sort_keys=True) + "\n")
        self._file_handle.flush()
        os.fsync(self._file_handle.fileno())

    def close(self):
        self._file_handle.close()


class TensorboardXWriter(EventWriter):
    """Writes the smoothed scalars, the images and the histograms to TensorBoard event files in
    log_dir (torch.utils.tensorboard.SummaryWriter, made at the first write: needs the
    `tensorboard` package)."""

    def __init__(self, log_dir: str, window_size: int = 20, **kwargs):
        self._window_size = window_size
        self._writer_args = {"log_dir": log_dir, **kwargs}
        self._summary_writer = None
        self._last_write = -1

    @property
    def _writer(self):
        if self._summary_writer is None:
            from torch.utils.tensorboard import SummaryWriter
            self._summary_writer = SummaryWriter(**self._writer_args)
        return self._summary_writer

    def write(self):
        storage = get_event_storage()
        newest = self._last_write
        for name, (value, itr) in storage.latest_with_smoothing_hint(self._window_size).items():
            if itr > self._last_write:
                self._writer.add_scalar(name, value, itr)
                newest = max(newest, itr)
        self._last_write = newest
        if storage._vis_data:  # this writer owns the images and histograms: cleared once written
            for name, image, itr in storage._vis_data:
                self._writer.add_image(name, image, itr)
            storage.clear_images()
        if storage._histograms:
            for params in storage._histograms:
                self._writer.add_histogram_raw(**params)
            storage.clear_histograms()

    def close(self):
        if self._summary_writer is not None:
            self._summary_writer.close()


class CommonMetricPrinter(EventWriter):
    """Logs (logger "detkit.utils.events") the common metrics on one line: ETA when max_iter is
    given, the iteration, the losses and "[metric]" scalars (median over window_size), time,
    data_time, lr and, on CUDA, max memory."""

    def __init__(self, max_iter: Optional[int] = None, window_size: int = 20):
        self.logger = logging.getLogger(__name__)
        self._max_iter = max_iter
        self._window_size = window_size
        self._last_write = None  # (iteration, time) of the last write without a "time" metric

    def _get_eta(self, storage) -> Optional[str]:
        if self._max_iter is None:
            return ""
        iteration = storage.iter
        try:
            eta_seconds = storage.history("time").median(1000) * (self._max_iter - iteration - 1)
        except KeyError:  # no "time" metric: from the wall time between writes
            eta = None
            if self._last_write is not None:
                seconds_per_iter = (time.perf_counter() - self._last_write[1]) / \
                    (iteration - self._last_write[0])
                eta = str(datetime.timedelta(
                    seconds=int(seconds_per_iter * (self._max_iter - iteration - 1))))
            self._last_write = (iteration, time.perf_counter())
            return eta
        storage.put_scalar("eta_seconds", eta_seconds, smoothing_hint=False)
        return str(datetime.timedelta(seconds=int(eta_seconds)))

    def _smoothed(self, storage, selected):
        return "  ".join(
            f"{name}: {buffer.median(storage.count_samples(name, self._window_size)):.4g}"
            for name, buffer in storage.histories().items() if selected(name))

    def write(self):
        storage = get_event_storage()
        iteration = storage.iter
        if iteration == self._max_iter:  # training done: progress only, nothing after it
            return
        parts = []
        eta = self._get_eta(storage)
        if eta:
            parts.append(f"eta: {eta}")
        parts.append(f"iter: {iteration}")
        for text in (self._smoothed(storage, lambda name: "loss" in name),
                     self._smoothed(storage, lambda name: "[metric]" in name)):
            if text:
                parts.append(text)
        histories = storage.histories()
        if "time" in histories:
            parts.append(f"time: {histories['time'].global_avg():.4f}")
            parts.append(f"last_time: {histories['time'].latest():.4f}")
        if "data_time" in histories:
            data_time = histories["data_time"]
            count = storage.count_samples("data_time", self._window_size)
            parts.append(f"data_time: {data_time.avg(count):.4f}")
            parts.append(f"last_data_time: {data_time.latest():.4f}")
        parts.append(f"lr: {histories['lr'].latest():.5g}" if "lr" in histories else "lr: N/A")
        if torch.cuda.is_available():
            parts.append(f"max_mem: {torch.cuda.max_memory_allocated() / 1024.0 / 1024.0:.0f}M")
        self.logger.info(" " + "  ".join(parts))
