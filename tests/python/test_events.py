"""detkit.utils.events (Detectron2's EventStorage and writers) against values computed here:
the medians JSONWriter writes (numpy over the iterations in the window), the iterations each
line carries, the console line of CommonMetricPrinter, name_scope, images and histograms, the
storage stack; the errors named. Usage: test_events.py [SHARED SOURCE DETKIT] (unused)."""
import json
import logging
import os
import tempfile

import numpy as np
import torch

from checks import check, finish, raises
from detkit.utils.events import (CommonMetricPrinter, EventStorage, EventWriter, JSONWriter,
                                 get_event_storage, has_event_storage)
from detkit.utils.history_buffer import HistoryBuffer

# JSONWriter: smoothed scalars as the median over the last `window` iterations, each written once
# at the iteration it was put; an unsmoothed one as put.
rng = np.random.default_rng(3)
losses = rng.random(30)
with tempfile.TemporaryDirectory() as tmp, EventStorage(start_iter=5) as storage:
    check(get_event_storage() is storage and has_event_storage(), "the storage entered is current")
    path = os.path.join(tmp, "metrics.json")
    writer = JSONWriter(path, window_size=4)
    for k in range(30):
        storage.put_scalar("loss", losses[k])
        if k % 3 == 0:
            storage.put_scalar("sparse", k, smoothing_hint=True)
        storage.put_scalars(lr=0.1 * k, smoothing_hint=False)
        if k % 10 == 9:
            writer.write()
        storage.step()
    writer.write()  # nothing new: no line
    writer.close()
    with open(path) as f:
        lines = [json.loads(line) for line in f]
# iteration = 5 + k; writes after k = 9, 19, 29. "sparse" (put at k % 3 == 0) is last put at
# k = 9, 18, 27: the median of its values put in the 4 iterations up to then (k = 6, 9; 15, 18;
# 24, 27), on its own line when not put at the writing iteration.
expected = [
    {"iteration": 14, "loss": np.median(losses[6:10]), "lr": 0.9, "sparse": 7.5},
    {"iteration": 23, "sparse": 16.5},
    {"iteration": 24, "loss": np.median(losses[16:20]), "lr": 1.9},
    {"iteration": 32, "sparse": 25.5},
    {"iteration": 34, "loss": np.median(losses[26:30]), "lr": 2.9},
]
got = sorted(lines, key=lambda d: d["iteration"])
check(len(got) == len(expected) and all(
    g.keys() == e.keys() and all(abs(g[key] - e[key]) < 1e-12 for key in e)
    for g, e in zip(got, expected)), f"JSONWriter lines {got} == {expected}")
check(not has_event_storage(), "no storage after the with block")
raises(AssertionError, get_event_storage, "with EventStorage")

# latest / history / count_samples / smoothing hints / name_scope / iter
storage = EventStorage()
storage.iter = 10
with storage.name_scope("roi_head/"):
    storage.put_scalar("accuracy", 0.5, smoothing_hint=False)
storage.put_scalar("accuracy", 0.25, cur_iter=3)
check(storage.latest() == {"roi_head/accuracy": (0.5, 10), "accuracy": (0.25, 3)},
      f"name_scope and cur_iter: {storage.latest()}")
check(storage.smoothing_hints() == {"roi_head/accuracy": False, "accuracy": True},
      "smoothing hints kept per name")
raises(AssertionError, lambda: storage.put_scalar("accuracy", 1.0, smoothing_hint=False),
       "accuracy")
raises(KeyError, lambda: storage.history("missing"), "missing")
for itr in (11, 12, 15, 30):
    storage.iter = itr
    storage.put_scalar("t", itr)
check(storage.count_samples("t", 19) == 3 and storage.count_samples("t", 16) == 2,
      "count_samples: the values put after (latest iteration - window)")
check(storage.latest_with_smoothing_hint(19)["t"] == (float(np.median([12, 15, 30])), 30),
      "latest_with_smoothing_hint: the median of the window")
storage.put_image("img", torch.zeros(3, 4, 4))
storage.put_histogram("h", torch.tensor([0.0, 1.0, 1.0, 3.0]), bins=3)
hist = storage._histograms[0]
check(len(storage._vis_data) == 1 and hist["bucket_counts"] == [1.0, 2.0, 1.0]
      and hist["bucket_limits"] == [1.0, 2.0, 3.0] and hist["sum_squares"] == 11.0
      and hist["global_step"] == 30, f"put_image, put_histogram: {hist}")
storage.clear_images()
storage.clear_histograms()
check(not storage._vis_data and not storage._histograms, "clear_images, clear_histograms")
raises(NotImplementedError, lambda: EventWriter().write(), "write")

# HistoryBuffer: bounded, global average over everything put
buffer = HistoryBuffer(max_length=3)
for value in (1.0, 2.0, 6.0, 10.0):
    buffer.update(value)
check(buffer.values() == [(2.0, 1), (6.0, 2), (10.0, 3)] and buffer.global_avg() == 19 / 4
      and buffer.avg(2) == 8.0 and buffer.median(3) == 6.0 and buffer.latest() == 10.0,
      "HistoryBuffer drops the oldest, global_avg keeps all")
raises(ValueError, lambda: HistoryBuffer(0), "max_length")
raises(IndexError, lambda: HistoryBuffer().latest(), "no value")


# CommonMetricPrinter: losses, [metric] and lr in one line, ETA from the median time
class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


capture = Capture()
logging.getLogger("detkit.utils.events").addHandler(capture)
logging.getLogger("detkit.utils.events").setLevel(logging.INFO)
with EventStorage() as storage:
    for k in range(5):
        storage.put_scalars(time=2.0 + k, loss_cls=float(k), lr=0.02)
        storage.put_scalar("[metric]bn", 7.0)
        storage.step()
    CommonMetricPrinter(max_iter=105, window_size=3).write()
    CommonMetricPrinter().write()
line, no_eta = capture.messages
# ETA: median time (4.0) x (105 - 5 - 1) iterations = 396 s; loss_cls the median of 2, 3, 4
check(line.startswith(" eta: 0:06:36  iter: 5  loss_cls: 3  [metric]bn: 7  time: 4.0000  "
                      "last_time: 6.0000  lr: 0.02"), f"printer line: {line!r}")
check("eta" not in no_eta and "iter: 5" in no_eta, f"no ETA without max_iter: {no_eta!r}")
check(storage.latest()["eta_seconds"] == (396.0, 5), "eta_seconds put")
finish()
