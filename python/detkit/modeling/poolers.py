"""Detectron2's ROIPooler (detectron2.modeling.poolers): each box pooled from the feature map of
its FPN level (chosen from its size), with ROIAlign (detkit's kernel) or ROIPool. Scriptable,
and traceable with a number of boxes that varies between calls."""
import math
from typing import List, Optional

import torch
from torch import nn

from ..layers.roi_align import ROIAlign
from ..structures.boxes import Boxes

__all__ = ["ROIPooler", "assign_boxes_to_levels", "convert_boxes_to_pooler_format"]


def assign_boxes_to_levels(box_lists: List[Boxes], min_level: int, max_level: int,
                           canonical_box_size: int, canonical_level: int) -> torch.Tensor:
    """For every box of every image (in order), its level minus min_level: floor(canonical_level
    + log2(sqrt(area) / canonical_box_size)), clamped to [min_level, max_level] (FPN eq. 1)."""
    sizes = torch.sqrt(torch.cat([boxes.area() for boxes in box_lists]))
    levels = torch.floor(canonical_level + torch.log2(sizes / canonical_box_size + 1e-8))
    levels = torch.clamp(levels, min=min_level, max=max_level)
    return levels.to(torch.int64) - min_level


@torch.jit.script_if_tracing
def _rows_with_image_index(boxes: List[torch.Tensor]) -> torch.Tensor:
    rows = [torch.cat([torch.full_like(b[:, :1], float(i)), b], dim=1)
            for i, b in enumerate(boxes)]
    return torch.cat(rows, dim=0)


def convert_boxes_to_pooler_format(box_lists: List[Boxes]) -> torch.Tensor:
    """(M, 5): every box of every image as (image index, x0, y0, x1, y1)."""
    return _rows_with_image_index([boxes.tensor for boxes in box_lists])


@torch.jit.script_if_tracing
def _zeros_like_rows(rows: Optional[torch.Tensor], channels: int, height: int, width: int,
                     like: torch.Tensor) -> torch.Tensor:
    count = rows.shape[0] if rows is not None else 0
    return torch.zeros((count, channels, height, width), dtype=like.dtype, device=like.device)


def _level_pooler(pooler_type, output_size, scale, sampling_ratio):
    if pooler_type == "ROIAlign":
        return ROIAlign(output_size, scale, sampling_ratio, aligned=False)
    if pooler_type == "ROIAlignV2":
        return ROIAlign(output_size, scale, sampling_ratio, aligned=True)
    if pooler_type == "ROIPool":
        try:
            from torchvision.ops import RoIPool
        except ImportError as e:
            raise ImportError("ROIPooler: pooler_type 'ROIPool' needs torchvision") from e
        return RoIPool(output_size, spatial_scale=scale)
    if pooler_type == "ROIAlignRotated":
        raise NotImplementedError("ROIPooler: 'ROIAlignRotated' is not available in detkit "
                                  "(no rotated ROIAlign kernel)")
    raise ValueError(f"ROIPooler: unknown pooler type '{pooler_type}' (known: ROIAlign, "
                     "ROIAlignV2, ROIPool)")


def _pyramid_levels(scales):
    """(min_level, max_level) of scales 1 / 2**level, halving from one to the next."""
    if not isinstance(scales, (list, tuple)) or len(scales) == 0:
        raise ValueError(f"ROIPooler: scales must be a non-empty list, got {scales!r}")
    levels = [-math.log2(s) if s > 0 else math.nan for s in scales]
    for i, level in enumerate(levels):
        if not math.isclose(level, round(level)) or round(level) != round(levels[0]) + i:
            raise ValueError(f"ROIPooler: scales {list(scales)} are not 1 / 2**k for "
                             "consecutive k (feature maps of a pyramid)")
    return int(round(levels[0])), int(round(levels[-1]))


class ROIPooler(nn.Module):
    """Pools (M, C, output_size) features for the boxes of a batch from one or more maps."""

    def __init__(self, output_size, scales, sampling_ratio, pooler_type, canonical_box_size=224,
                 canonical_level=4):
        super().__init__()
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        if len(output_size) != 2 or not all(isinstance(s, int) for s in output_size):
            raise ValueError(f"ROIPooler: output_size must be an int or two ints, got "
                             f"{output_size!r}")
        self.output_size = tuple(output_size)
        self.min_level, self.max_level = _pyramid_levels(scales)
        if self.min_level < 0:
            raise ValueError(f"ROIPooler: scales must be at most 1, got {list(scales)}")
        if canonical_box_size <= 0:
            raise ValueError(f"ROIPooler: canonical_box_size must be positive, got "
                             f"{canonical_box_size}")
        self.level_poolers = nn.ModuleList(
            _level_pooler(pooler_type, self.output_size, s, sampling_ratio) for s in scales)
        self.canonical_level = canonical_level
        self.canonical_box_size = canonical_box_size

    def forward(self, x: List[torch.Tensor], box_lists: List[Boxes]) -> torch.Tensor:
        """x: one (N, C, H, W) map per scale; box_lists: N Boxes in image coordinates."""
        num_levels = len(self.level_poolers)
        if len(x) != num_levels:
            raise ValueError("ROIPooler: got " + str(len(x)) + " feature maps for " +
                             str(num_levels) + " scales")
        if len(box_lists) != x[0].size(0):
            raise ValueError("ROIPooler: got " + str(len(box_lists)) + " box lists for a batch "
                             "of " + str(x[0].size(0)) + " images")
        channels = x[0].shape[1]
        if len(box_lists) == 0:
            return _zeros_like_rows(None, channels, self.output_size[0], self.output_size[1],
                                    x[0])
        rows = convert_boxes_to_pooler_format(box_lists)
        if num_levels == 1:
            return self.level_poolers[0](x[0], rows)
        levels = assign_boxes_to_levels(box_lists, self.min_level, self.max_level,
                                        self.canonical_box_size, self.canonical_level)
        out = _zeros_like_rows(rows, channels, self.output_size[0], self.output_size[1], x[0])
        for level, pooler in enumerate(self.level_poolers):
            index = torch.nonzero(levels == level).squeeze(1)
            # index_put_ rather than out[index] = ...: pytorch issue 49852 under tracing
            out.index_put_((index,), pooler(x[level], rows[index]))
        return out
