"""Detectron2's anchor generators (detectron2.modeling.anchor_generator): DefaultAnchorGenerator
places, at every cell of every feature map, one anchor per (size, aspect ratio), centred on the
cell's offset point. Plain torch, so that it scripts and traces."""
import math
from typing import List

import torch
from torch import nn

from ..config.configurable import configurable
from ..structures.boxes import Boxes
from ..structures.rotated_boxes import RotatedBoxes
from ..utils.registry import Registry

ANCHOR_GENERATOR_REGISTRY = Registry("ANCHOR_GENERATOR")
ANCHOR_GENERATOR_REGISTRY.__doc__ = "Anchor generators: called with (cfg, input_shape)."

__all__ = ["ANCHOR_GENERATOR_REGISTRY", "DefaultAnchorGenerator", "RotatedAnchorGenerator",
           "build_anchor_generator"]


class BufferList(nn.Module):
    """Tensors held as buffers (they follow .to() and appear in state_dict) under "0", "1"..."""

    def __init__(self, buffers):
        super().__init__()
        for i, buffer in enumerate(buffers):
            self.register_buffer(str(i), buffer, persistent=False)

    def __len__(self):
        return len(self._buffers)

    def __iter__(self):
        return iter(self._buffers.values())


def _per_level(params, num_features, name):
    """params as one list per feature map: a flat list of numbers is used for every map."""
    if not isinstance(params, (list, tuple)) or len(params) == 0:
        raise ValueError(f"{name} must be a non-empty list, got {params!r}")
    if not isinstance(params[0], (list, tuple)):
        return [list(params)] * num_features
    if len(params) == 1:
        return [list(params[0])] * num_features
    if len(params) != num_features:
        raise ValueError(f"{name} has {len(params)} lists but there are {num_features} feature "
                         "maps (give one list, or one per feature map)")
    return [list(p) for p in params]


def generate_cell_anchors(sizes=(32, 64, 128, 256, 512), aspect_ratios=(0.5, 1, 2)):
    """(len(sizes) * len(aspect_ratios), 4) XYXY anchors centred on (0, 0): for each size s and
    ratio r (height / width), the box of area s**2 with w = sqrt(s**2 / r), h = r * w."""
    rows = []
    for size in sizes:
        for ratio in aspect_ratios:
            if size <= 0 or ratio <= 0:
                raise ValueError(f"anchor sizes and aspect ratios must be positive, got size "
                                 f"{size}, ratio {ratio}")
            width = math.sqrt(size * size / ratio)
            height = ratio * width
            rows.append([-width / 2.0, -height / 2.0, width / 2.0, height / 2.0])
    return torch.tensor(rows, dtype=torch.float32)


def _grid_shifts(size: List[int], stride: int, offset: float, like: torch.Tensor):
    """x and y of every cell's anchor centre, row-major, each (H * W,)."""
    height, width = size[0], size[1]
    xs = torch.arange(offset * stride, width * stride, step=stride, dtype=torch.float32,
                      device=like.device)
    ys = torch.arange(offset * stride, height * stride, step=stride, dtype=torch.float32,
                      device=like.device)
    grid_y, grid_x = torch.meshgrid(ys, xs, indexing="ij")
    return grid_x.reshape(-1), grid_y.reshape(-1)


@ANCHOR_GENERATOR_REGISTRY.register()
class DefaultAnchorGenerator(nn.Module):
    """Axis-aligned anchors for each feature map (strides[i] pixels per cell)."""

    box_dim: torch.jit.Final[int] = 4

    @configurable
    def __init__(self, *, sizes, aspect_ratios, strides, offset=0.5):
        super().__init__()
        if not 0.0 <= offset < 1.0:
            raise ValueError(f"anchor offset must be in [0, 1), got {offset}")
        self.strides = [int(s) for s in strides]
        self.num_features = len(self.strides)
        sizes = _per_level(sizes, self.num_features, "anchor sizes")
        ratios = _per_level(aspect_ratios, self.num_features, "anchor aspect ratios")
        self.cell_anchors = BufferList([generate_cell_anchors(s, r) for s, r in zip(sizes, ratios)])
        self.offset = float(offset)

    @classmethod
    def from_config(cls, cfg, input_shape):
        return {"sizes": cfg.MODEL.ANCHOR_GENERATOR.SIZES,
                "aspect_ratios": cfg.MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS,
                "strides": [shape.stride for shape in input_shape],
                "offset": cfg.MODEL.ANCHOR_GENERATOR.OFFSET}

    @property
    @torch.jit.unused
    def num_cell_anchors(self):
        return self.num_anchors

    @property
    @torch.jit.unused
    def num_anchors(self):
        """Anchors per cell of each feature map."""
        return [len(a) for a in self.cell_anchors]

    def _grid_anchors(self, grid_sizes: List[List[int]]) -> List[torch.Tensor]:
        anchors = []
        buffers: List[torch.Tensor] = [b[1] for b in self.cell_anchors.named_buffers()]
        for size, stride, base in zip(grid_sizes, self.strides, buffers):
            shift_x, shift_y = _grid_shifts(size, stride, self.offset, base)
            shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, features: List[torch.Tensor]) -> List[Boxes]:
        """features: one (N, C, H, W) map per stride; one Boxes per map, (H * W * A, 4) ordered
        by cell (row-major) then by cell anchor."""
        if len(features) != self.num_features:
            raise ValueError("DefaultAnchorGenerator: got " + str(len(features)) +
                             " feature maps for " + str(self.num_features) + " strides")
        grid_sizes = [feature.shape[-2:] for feature in features]
        return [Boxes(a) for a in self._grid_anchors(grid_sizes)]


def build_anchor_generator(cfg, input_shape):
    """The generator named by cfg.MODEL.ANCHOR_GENERATOR.NAME, built from (cfg, input_shape)."""
    return ANCHOR_GENERATOR_REGISTRY.get(cfg.MODEL.ANCHOR_GENERATOR.NAME)(cfg, input_shape)


def generate_rotated_cell_anchors(sizes, aspect_ratios, angles):
    """(len(sizes) * len(aspect_ratios) * len(angles), 5) anchors (0, 0, w, h, angle), in the
    order size, ratio, angle (w and h as generate_cell_anchors')."""
    rows = []
    for size in sizes:
        for ratio in aspect_ratios:
            if size <= 0 or ratio <= 0:
                raise ValueError(f"anchor sizes and aspect ratios must be positive, got size "
                                 f"{size}, ratio {ratio}")
            width = math.sqrt(size * size / ratio)
            rows.extend([0.0, 0.0, width, ratio * width, float(a)] for a in angles)
    return torch.tensor(rows, dtype=torch.float32)


@ANCHOR_GENERATOR_REGISTRY.register()
class RotatedAnchorGenerator(nn.Module):
    """Rotated anchors (x_center, y_center, w, h, angle) for each feature map: every (size,
    ratio, angle) at every cell."""

    box_dim: torch.jit.Final[int] = 5

    @configurable
    def __init__(self, *, sizes, aspect_ratios, strides, angles, offset=0.5):
        super().__init__()
        if not 0.0 <= offset < 1.0:
            raise ValueError(f"anchor offset must be in [0, 1), got {offset}")
        self.strides = [int(s) for s in strides]
        self.num_features = len(self.strides)
        sizes = _per_level(sizes, self.num_features, "anchor sizes")
        ratios = _per_level(aspect_ratios, self.num_features, "anchor aspect ratios")
        angles = _per_level(angles, self.num_features, "anchor angles")
        self.cell_anchors = BufferList([generate_rotated_cell_anchors(s, r, a)
                                        for s, r, a in zip(sizes, ratios, angles)])
        self.offset = float(offset)

    @classmethod
    def from_config(cls, cfg, input_shape):
        return {"sizes": cfg.MODEL.ANCHOR_GENERATOR.SIZES,
                "aspect_ratios": cfg.MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS,
                "strides": [shape.stride for shape in input_shape],
                "offset": cfg.MODEL.ANCHOR_GENERATOR.OFFSET,
                "angles": cfg.MODEL.ANCHOR_GENERATOR.ANGLES}

    @property
    @torch.jit.unused
    def num_cell_anchors(self):
        return self.num_anchors

    @property
    @torch.jit.unused
    def num_anchors(self):
        return [len(a) for a in self.cell_anchors]

    def _grid_anchors(self, grid_sizes: List[List[int]]) -> List[torch.Tensor]:
        anchors = []
        buffers: List[torch.Tensor] = [b[1] for b in self.cell_anchors.named_buffers()]
        for size, stride, base in zip(grid_sizes, self.strides, buffers):
            shift_x, shift_y = _grid_shifts(size, stride, self.offset, base)
            zeros = torch.zeros_like(shift_x)
            shifts = torch.stack((shift_x, shift_y, zeros, zeros, zeros), dim=1)
            anchors.append((shifts.view(-1, 1, 5) + base.view(1, -1, 5)).reshape(-1, 5))
        return anchors

    def forward(self, features: List[torch.Tensor]) -> List[RotatedBoxes]:
        if len(features) != self.num_features:
            raise ValueError("RotatedAnchorGenerator: got " + str(len(features)) +
                             " feature maps for " + str(self.num_features) + " strides")
        grid_sizes = [feature.shape[-2:] for feature in features]
        return [RotatedBoxes(a) for a in self._grid_anchors(grid_sizes)]
