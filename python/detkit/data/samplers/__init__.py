"""detkit.data.samplers: Detectron2's samplers (detectron2.data.samplers)."""
from .distributed_sampler import (InferenceSampler, RandomSubsetTrainingSampler,
                                  RepeatFactorTrainingSampler, TrainingSampler)
from .grouped_batch_sampler import GroupedBatchSampler

__all__ = ["GroupedBatchSampler", "InferenceSampler", "RandomSubsetTrainingSampler",
           "RepeatFactorTrainingSampler", "TrainingSampler"]
