"""Detectron2's GroupedBatchSampler: batches of indices that share a group id."""
import numpy as np
from torch.utils.data.sampler import BatchSampler, Sampler

__all__ = ["GroupedBatchSampler"]


class GroupedBatchSampler(BatchSampler):
    """Batches of `batch_size` indices of `sampler`, each batch within one group (group_ids[i]
    is index i's group), in the sampler's order as far as the grouping allows; the incomplete
    batches left at the end are dropped."""

    def __init__(self, sampler, group_ids, batch_size):
        if not isinstance(sampler, Sampler):
            raise ValueError(f"sampler should be an instance of torch.utils.data.Sampler, but got "
                             f"sampler={sampler}")
        self.sampler = sampler
        self.group_ids = np.asarray(group_ids)
        if self.group_ids.ndim != 1:
            raise ValueError(f"group_ids must be one id per index, got shape "
                             f"{self.group_ids.shape}")
        self.batch_size = batch_size
        self.buffer_per_group = {k: [] for k in np.unique(self.group_ids).tolist()}

    def __iter__(self):
        for idx in self.sampler:
            buffer = self.buffer_per_group[self.group_ids[idx]]
            buffer.append(idx)
            if len(buffer) == self.batch_size:
                yield buffer[:]
                del buffer[:]

    def __len__(self):
        raise NotImplementedError("len() of GroupedBatchSampler is not well-defined.")
