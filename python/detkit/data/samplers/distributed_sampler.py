"""Detectron2's samplers over torch.utils.data.Sampler: each process of a job (detkit.utils.comm's
rank and world size) takes every world_size-th index of one stream that all processes compute
alike from the same seed."""
import itertools
import logging
import math
from collections import defaultdict
from typing import Optional

import numpy as np
import torch
from torch.utils.data.sampler import Sampler

from ...utils import comm

__all__ = ["TrainingSampler", "InferenceSampler", "RepeatFactorTrainingSampler",
           "RandomSubsetTrainingSampler"]

logger = logging.getLogger(__name__)


def _seed_or_shared(seed, what):
    """The seed given, or a random one. Detectron2 agrees on a random seed across processes with
    an all_gather, which detkit's Python does not have: a job of several processes must give it."""
    if seed is not None:
        return int(seed)
    if comm.get_world_size() > 1:
        raise ValueError(f"{what}: give a seed in a job of {comm.get_world_size()} processes "
                         "(every process must draw the same indices)")
    return int(np.random.randint(2 ** 31))


class TrainingSampler(Sampler):
    """An endless stream: shuffle(range(size)) + shuffle(range(size)) + ... (or range(size)
    repeated without shuffle), from a generator seeded once; this process yields the items at
    rank, rank + world_size, ..."""

    def __init__(self, size: int, shuffle: bool = True, seed: Optional[int] = None):
        if not isinstance(size, int):
            raise TypeError(f"TrainingSampler(size=) expects an int. Got type {type(size)}.")
        if size <= 0:
            raise ValueError(f"TrainingSampler(size=) expects a positive int. Got {size}.")
        self._size = size
        self._shuffle = shuffle
        self._seed = _seed_or_shared(seed, "TrainingSampler")
        self._rank = comm.get_rank()
        self._world_size = comm.get_world_size()

    def __iter__(self):
        yield from itertools.islice(self._infinite_indices(), self._rank, None, self._world_size)

    def _infinite_indices(self):
        generator = torch.Generator()
        generator.manual_seed(self._seed)
        while True:
            if self._shuffle:
                yield from torch.randperm(self._size, generator=generator).tolist()
            else:
                yield from range(self._size)


class RandomSubsetTrainingSampler(TrainingSampler):
    """TrainingSampler over a fixed random subset of int(size * subset_ratio) indices (the first
    of a permutation drawn with seed_subset); the stream is shuffled with seed_shuffle."""

    def __init__(self, size: int, subset_ratio: float, shuffle: bool = True,
                 seed_shuffle: Optional[int] = None, seed_subset: Optional[int] = None):
        super().__init__(size=size, shuffle=shuffle, seed=seed_shuffle)
        if not 0.0 < subset_ratio <= 1.0:
            raise ValueError(f"RandomSubsetTrainingSampler: subset_ratio must be in (0, 1], got "
                             f"{subset_ratio}")
        self._size_subset = int(size * subset_ratio)
        if self._size_subset <= 0:
            raise ValueError(f"RandomSubsetTrainingSampler: {size} * {subset_ratio} leaves no "
                             "index")
        self._seed_subset = _seed_or_shared(seed_subset, "RandomSubsetTrainingSampler")
        generator = torch.Generator()
        generator.manual_seed(self._seed_subset)
        self._indexes_subset = torch.randperm(self._size, generator=generator)[:self._size_subset]
        logger.info("RandomSubsetTrainingSampler: %d of %d indices", self._size_subset, size)

    def _infinite_indices(self):
        generator = torch.Generator()
        generator.manual_seed(self._seed)
        while True:
            if self._shuffle:
                order = torch.randperm(self._size_subset, generator=generator)
                yield from self._indexes_subset[order].tolist()
            else:
                yield from self._indexes_subset.tolist()


class RepeatFactorTrainingSampler(Sampler):
    """TrainingSampler where index i appears repeat_factors[i] times per epoch on average: the
    integer part always, one more time with probability the fractional part (drawn anew each
    epoch), then the epoch is shuffled."""

    def __init__(self, repeat_factors, *, shuffle=True, seed=None):
        repeat_factors = torch.as_tensor(repeat_factors, dtype=torch.float32)
        if repeat_factors.dim() != 1 or bool((repeat_factors < 0).any()):
            raise ValueError("RepeatFactorTrainingSampler: repeat_factors must be a vector of "
                             "non-negative numbers")
        self._shuffle = shuffle
        self._seed = _seed_or_shared(seed, "RepeatFactorTrainingSampler")
        self._rank = comm.get_rank()
        self._world_size = comm.get_world_size()
        self._int_part = torch.trunc(repeat_factors)
        self._frac_part = repeat_factors - self._int_part

    @staticmethod
    def repeat_factors_from_category_frequency(dataset_dicts, repeat_thresh, sqrt=True):
        """LVIS's repeat factors: with f(c) the fraction of images that contain category c,
        r(c) = max(1, t / f(c)) (its square root when sqrt) and an image's factor is the largest
        r(c) over its categories (1 for an image without annotations). A float32 tensor."""
        images_with = defaultdict(int)
        categories_per_image = []
        for record in dataset_dicts:
            categories = {annotation["category_id"] for annotation in record["annotations"]}
            categories_per_image.append(categories)
            for category in categories:
                images_with[category] += 1
        factor_of = {}
        for category, count in images_with.items():
            ratio = repeat_thresh / (count / len(dataset_dicts))
            factor_of[category] = max(1.0, math.sqrt(ratio) if sqrt else ratio)
        for category in sorted(factor_of):
            logger.info("Cat ID %s: freq=%.2f, rep=%.2f", category,
                        images_with[category] / len(dataset_dicts), factor_of[category])
        factors = [max((factor_of[c] for c in categories), default=1.0)
                   for categories in categories_per_image]
        return torch.tensor(factors, dtype=torch.float32)

    def _get_epoch_indices(self, generator):
        """One epoch's indices, each repeated its integer part plus one more time where a
        uniform draw falls below its fractional part."""
        draws = torch.rand(len(self._frac_part), generator=generator)
        counts = (self._int_part + (draws < self._frac_part).float()).long()
        return torch.repeat_interleave(torch.arange(len(counts)), counts)

    def __iter__(self):
        yield from itertools.islice(self._infinite_indices(), self._rank, None, self._world_size)

    def _infinite_indices(self):
        generator = torch.Generator()
        generator.manual_seed(self._seed)
        while True:
            indices = self._get_epoch_indices(generator)
            if self._shuffle:
                indices = indices[torch.randperm(len(indices), generator=generator)]
            yield from indices.tolist()


class InferenceSampler(Sampler):
    """Every index exactly once across the job: rank r gets a contiguous shard; the first
    size % world_size shards have one more index."""

    def __init__(self, size: int):
        if not isinstance(size, int) or size <= 0:
            raise ValueError(f"InferenceSampler(size=) expects a positive int, got {size!r}")
        self._size = size
        self._rank = comm.get_rank()
        self._world_size = comm.get_world_size()
        self._local_indices = self._get_local_indices(size, self._world_size, self._rank)

    @staticmethod
    def _get_local_indices(total_size, world_size, rank):
        base, extra = divmod(total_size, world_size)
        begin = rank * base + min(rank, extra)
        return range(begin, begin + base + (1 if rank < extra else 0))

    def __iter__(self):
        yield from self._local_indices

    def __len__(self):
        return len(self._local_indices)
