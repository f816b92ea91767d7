"""ROIAlign as Detectron2's (detectron2.layers.roi_align): detkit's kernel with its gradient."""
from typing import Tuple

import torch
from torch import nn
from torch.nn.modules.utils import _pair


def roi_align(input, boxes, output_size, spatial_scale, sampling_ratio, aligned=False):
    """input (N, C, H, W); boxes (K, 5) rows (batch index, x0, y0, x1, y1) or a list of (Ki, 4)
    per image; output (K, C, output_size)."""
    if isinstance(boxes, (list, tuple)):
        boxes = torch.cat([torch.cat([torch.full_like(b[:, :1], i), b], dim=1)
                           for i, b in enumerate(boxes)], dim=0)
    if boxes.dim() != 2 or boxes.shape[1] != 5:
        raise ValueError(f"roi_align: boxes must be (K, 5) (batch index, x0, y0, x1, y1), got "
                         f"{tuple(boxes.shape)}")
    height, width = _pair(output_size)
    return torch.ops.detkit.roi_align(input, boxes.to(input.dtype), float(spatial_scale),
                                      int(height), int(width), int(sampling_ratio), bool(aligned))


class ROIAlign(nn.Module):
    """Scriptable: forward takes (N, C, H, W) features and (K, 5) boxes (batch index first)."""

    output_hw: Tuple[int, int]

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=True):
        """aligned=True shifts box corners by -0.5 pixel (Detectron2's correct alignment)."""
        super().__init__()
        self.output_size = output_size
        self.output_hw = tuple(int(s) for s in _pair(output_size))
        self.spatial_scale = float(spatial_scale)
        self.sampling_ratio = int(sampling_ratio)
        self.aligned = bool(aligned)

    def forward(self, input: torch.Tensor, rois: torch.Tensor) -> torch.Tensor:
        if input.dim() != 4:
            raise ValueError("ROIAlign takes an (N, C, H, W) input, got " + str(input.shape))
        if not torch.jit.is_scripting():
            if isinstance(rois, (list, tuple)):  # eager only: one (Ki, 4) tensor per image
                return roi_align(input, rois, self.output_hw, self.spatial_scale,
                                 self.sampling_ratio, self.aligned)
        if rois.dim() != 2 or rois.size(1) != 5:
            raise ValueError("ROIAlign: rois must be (K, 5) (batch index, x0, y0, x1, y1), got "
                             + str(rois.shape))
        return torch.ops.detkit.roi_align(input, rois.to(input.dtype), self.spatial_scale,
                                          self.output_hw[0], self.output_hw[1],
                                          self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned})")
