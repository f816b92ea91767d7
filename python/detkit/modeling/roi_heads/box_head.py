"""Detectron2's box heads (detectron2.modeling.roi_heads.box_head): ROI_BOX_HEAD_REGISTRY and
FastRCNNConvFCHead, the per-region features the box predictor reads."""
from typing import List

import numpy as np
import torch
from torch import nn

from ...config import configurable
from ...layers import Conv2d, ShapeSpec, c2_msra_fill, c2_xavier_fill, get_norm
from ...utils.registry import Registry

__all__ = ["FastRCNNConvFCHead", "build_box_head", "ROI_BOX_HEAD_REGISTRY"]

ROI_BOX_HEAD_REGISTRY = Registry("ROI_BOX_HEAD")
ROI_BOX_HEAD_REGISTRY.__doc__ = """Box heads: per-region features from pooled features, built
as obj(cfg, input_shape)."""


# An nn.Sequential (scriptable): the layers are registered in the order forward runs them.
@ROI_BOX_HEAD_REGISTRY.register()
class FastRCNNConvFCHead(nn.Sequential):
    """3x3 convolutions (each with its norm and a ReLU), then fully connected layers (each with
    a ReLU), the first after a flatten."""

    @configurable
    def __init__(self, input_shape: ShapeSpec, *, conv_dims: List[int], fc_dims: List[int],
                 conv_norm=""):
        """conv_dims / fc_dims: the output sizes of the convolutions / fully connected layers
        (together at least one); conv_norm: a get_norm name or callable for the convolutions."""
        super().__init__()
        if len(conv_dims) + len(fc_dims) == 0:
            raise ValueError("FastRCNNConvFCHead needs at least one conv or fc layer")
        self._output_size = (input_shape.channels, input_shape.height, input_shape.width)

        self.conv_norm_relus = []
        for k, conv_dim in enumerate(conv_dims):
            conv = Conv2d(self._output_size[0], conv_dim, kernel_size=3, padding=1,
                          bias=not conv_norm, norm=get_norm(conv_norm, conv_dim),
                          activation=nn.ReLU())
            self.add_module(f"conv{k + 1}", conv)
            self.conv_norm_relus.append(conv)
            self._output_size = (conv_dim, self._output_size[1], self._output_size[2])

        self.fcs = []
        for k, fc_dim in enumerate(fc_dims):
            if k == 0:
                self.add_module("flatten", nn.Flatten())
            fc = nn.Linear(int(np.prod(self._output_size)), fc_dim)
            self.add_module(f"fc{k + 1}", fc)
            self.add_module(f"fc_relu{k + 1}", nn.ReLU())
            self.fcs.append(fc)
            self._output_size = fc_dim

        for layer in self.conv_norm_relus:
            c2_msra_fill(layer)
        for layer in self.fcs:
            c2_xavier_fill(layer)

    @classmethod
    def from_config(cls, cfg, input_shape):
        head = cfg.MODEL.ROI_BOX_HEAD
        return {
            "input_shape": input_shape,
            "conv_dims": [head.CONV_DIM] * head.NUM_CONV,
            "fc_dims": [head.FC_DIM] * head.NUM_FC,
            "conv_norm": head.NORM,
        }

    def forward(self, x):
        for layer in self:
            x = layer(x)
        return x

    @property
    @torch.jit.unused
    def output_shape(self):
        """ShapeSpec of the features this head gives."""
        size = self._output_size
        if isinstance(size, int):
            return ShapeSpec(channels=size)
        return ShapeSpec(channels=size[0], height=size[1], width=size[2])


def build_box_head(cfg, input_shape):
    """The box head named by cfg.MODEL.ROI_BOX_HEAD.NAME."""
    return ROI_BOX_HEAD_REGISTRY.get(cfg.MODEL.ROI_BOX_HEAD.NAME)(cfg, input_shape)
