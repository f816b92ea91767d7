"""Detectron2's detectron2.data.common: the torch datasets a data loader is made of (a list as a
dataset, a mapped dataset, batches grouped by aspect ratio, a map-style dataset read through a
sampler as an iterable one)."""
import contextlib
import copy
import itertools
import logging
import pickle
import random
from typing import Callable, Union

import numpy as np
import torch
import torch.utils.data as data
from torch.utils.data.sampler import Sampler

from ._picklable import PicklableWrapper

__all__ = ["MapDataset", "DatasetFromList", "AspectRatioGroupedDataset", "ToIterableDataset",
           "set_default_dataset_from_list_serialize_method"]

logger = logging.getLogger(__name__)


class _TorchSerializedList:
    """A list stored as one byte buffer (every item pickled, then concatenated) plus the end
    offset of each item, both torch tensors: DataLoader workers share them instead of touching
    (and so copying) millions of Python objects."""

    def __init__(self, items: list):
        pieces = [np.frombuffer(pickle.dumps(item, protocol=-1), dtype=np.uint8)
                  for item in items]
        ends = np.cumsum(np.asarray([len(p) for p in pieces], dtype=np.int64))
        self._ends = torch.from_numpy(ends)
        self._bytes = torch.from_numpy(np.concatenate(pieces) if pieces
                                       else np.zeros(0, dtype=np.uint8))
        logger.info("Serialized %d elements into %.2f MiB", len(pieces),
                    len(self._bytes) / 1024 ** 2)

    def __len__(self):
        return len(self._ends)

    def __getitem__(self, idx):
        idx = int(idx)
        if idx < 0:
            idx += len(self)
        if not 0 <= idx < len(self):
            raise IndexError(f"index {idx} is out of range for a list of {len(self)} elements")
        begin = 0 if idx == 0 else int(self._ends[idx - 1])
        return pickle.loads(memoryview(self._bytes[begin:int(self._ends[idx])].numpy()))


_default_serialize_method = _TorchSerializedList


@contextlib.contextmanager
def set_default_dataset_from_list_serialize_method(new):
    """Within the block, DatasetFromList(..., serialize=True) stores its list with `new(list)`."""
    global _default_serialize_method
    previous = _default_serialize_method
    _default_serialize_method = new
    try:
        yield
    finally:
        _default_serialize_method = previous


class DatasetFromList(data.Dataset):
    """A list as a torch Dataset. copy: items are deep-copied when read (so a mapper may change
    them), unless serialized (a serialized item is a fresh object anyway). serialize: True stores
    the list with the default method (one pickled byte buffer), a callable stores `callable(list)`,
    False keeps the list."""

    def __init__(self, lst: list, copy: bool = True, serialize: Union[bool, Callable] = True):
        if not isinstance(serialize, bool) and not callable(serialize):
            raise TypeError(f"DatasetFromList(serialize=) must be a bool or a callable, got "
                            f"{type(serialize).__name__}")
        self._copy = copy
        self._serialize = serialize is not False
        if self._serialize:
            method = serialize if callable(serialize) else _default_serialize_method
            logger.info("Serializing the dataset using: %s", method)
            lst = method(lst)
        self._lst = lst

    def __len__(self):
        return len(self._lst)

    def __getitem__(self, idx):
        if self._copy and not self._serialize:
            return copy.deepcopy(self._lst[idx])
        return self._lst[idx]


class _MapIterableDataset(data.IterableDataset):
    """map_func over an iterable dataset; the items it maps to None are left out."""

    def __init__(self, dataset, map_func):
        self._dataset = dataset
        self._map_func = PicklableWrapper(map_func)

    def __len__(self):
        return len(self._dataset)

    def __iter__(self):
        for item in self._dataset:
            mapped = self._map_func(item)
            if mapped is not None:
                yield mapped


class MapDataset(data.Dataset):
    """map_func over a dataset. Over an iterable dataset this is an iterable dataset that skips
    the items mapped to None. Over a map-style dataset, an index mapped to None is retried with
    other indices drawn at random (seeded) from those not yet seen to fail, as Detectron2's."""

    def __new__(cls, dataset, map_func):
        if isinstance(dataset, data.IterableDataset):
            return _MapIterableDataset(dataset, map_func)
        return super().__new__(cls)

    def __init__(self, dataset, map_func):
        self._dataset = dataset
        self._map_func = PicklableWrapper(map_func)
        self._rng = random.Random(42)
        self._fallback_candidates = set(range(len(dataset)))

    def __getnewargs__(self):
        return self._dataset, self._map_func

    def __len__(self):
        return len(self._dataset)

    def __getitem__(self, idx):
        current = int(idx)
        for attempt in itertools.count(1):
            mapped = self._map_func(self._dataset[current])
            if mapped is not None:
                self._fallback_candidates.add(current)
                return mapped
            self._fallback_candidates.discard(current)
            if not self._fallback_candidates:
                raise RuntimeError(f"MapDataset: the mapper returned None for index {idx} and "
                                   "for every other index tried; no item can be produced")
            current = self._rng.sample(sorted(self._fallback_candidates), k=1)[0]
            if attempt >= 3:
                logger.warning("Failed to apply the mapper for index %s, %d retries", idx, attempt)


def _roundrobin(*iterables):
    """Items of the iterables in turn (A1 B1 C1 A2 B2 ...), each left out once exhausted."""
    active = [iter(it) for it in iterables]
    while active:
        still = []
        for it in active:
            try:
                yield next(it)
                still.append(it)
            except StopIteration:
                pass
        active = still


def _shard_for_worker(iterable, chunk_size=1):
    """Inside a DataLoader worker k of n: chunks k, k + n, k + 2n, ... of `chunk_size`
    consecutive items of `iterable`; outside a worker (or with one worker) all of it."""
    info = data.get_worker_info()
    if info is None or info.num_workers == 1:
        yield from iterable
        return
    step = info.num_workers * chunk_size
    yield from _roundrobin(*[itertools.islice(iterable, info.id * chunk_size + i, None, step)
                             for i in range(chunk_size)])


class ToIterableDataset(data.IterableDataset):
    """A map-style dataset read in the order of `sampler`, as an iterable dataset. With
    shard_sampler, each DataLoader worker keeps its own share of the sampler's indices (chunks of
    shard_chunk_size), so that the workers together produce the sampler's stream once."""

    def __init__(self, dataset: data.Dataset, sampler: Sampler, shard_sampler: bool = True,
                 shard_chunk_size: int = 1):
        if isinstance(dataset, data.IterableDataset):
            raise TypeError("ToIterableDataset: the dataset is already an IterableDataset")
        if not isinstance(sampler, Sampler):
            raise TypeError(f"ToIterableDataset: sampler must be a torch Sampler, got "
                            f"{type(sampler).__name__}")
        self.dataset = dataset
        self.sampler = sampler
        self.shard_sampler = shard_sampler
        self.shard_chunk_size = shard_chunk_size

    def __iter__(self):
        indices = _shard_for_worker(self.sampler, self.shard_chunk_size) \
            if self.shard_sampler else self.sampler
        for idx in indices:
            yield self.dataset[idx]

    def __len__(self):
        return len(self.sampler)


class AspectRatioGroupedDataset(data.IterableDataset):
    """Batches of `batch_size` dicts that are all wide (width > height) or all tall (the rest),
    from an iterable of dicts with "width" and "height"."""

    def __init__(self, dataset, batch_size):
        self.dataset = dataset
        self.batch_size = batch_size
        self._buckets = [[], []]

    def __iter__(self):
        for d in self.dataset:
            bucket = self._buckets[0 if d["width"] > d["height"] else 1]
            bucket.append(d)
            if len(bucket) == self.batch_size:
                batch = bucket[:]
                del bucket[:]  # before yielding: the consumer may never come back
                yield batch
