"""RPN heads (Detectron2's RPN_HEAD_REGISTRY and StandardRPNHead): per feature map, objectness
logits and box deltas for every anchor of every cell."""
from typing import List

import torch
from torch import nn

from ...config.configurable import configurable
from ...layers import Conv2d
from ..anchor_generator import build_anchor_generator
from ...utils.registry import Registry

__all__ = ["RPN_HEAD_REGISTRY", "StandardRPNHead", "build_rpn_head"]

RPN_HEAD_REGISTRY = Registry("RPN_HEAD")
RPN_HEAD_REGISTRY.__doc__ = """RPN heads, each called as obj(cfg, input_shape) (input_shape: the
ShapeSpec of each feature map the RPN reads) to give an nn.Module."""


def build_rpn_head(cfg, input_shape):
    """The head cfg.MODEL.RPN.HEAD_NAME names, built from (cfg, input_shape)."""
    return RPN_HEAD_REGISTRY.get(cfg.MODEL.RPN.HEAD_NAME)(cfg, input_shape)


def _hidden_conv(in_channels: int, out_channels: int) -> Conv2d:
    """3x3 conv, same size, followed by ReLU."""
    return Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1,
                  activation=nn.ReLU())


@RPN_HEAD_REGISTRY.register()
class StandardRPNHead(nn.Module):
    """Faster R-CNN's RPN head, shared by all feature maps: 3x3 conv(s) with ReLU, then two 1x1
    convs giving num_anchors objectness logits and num_anchors * box_dim deltas per cell."""

    @configurable
    def __init__(self, *, in_channels: int, num_anchors: int, box_dim: int = 4,
                 conv_dims: List[int] = (-1,)):
        """conv_dims: the output channels of each hidden conv, -1 for as many as its input.
        One entry gives a single conv named `conv` (Detectron2's checkpoints' names), several a
        Sequential `conv` of conv0, conv1, ..."""
        super().__init__()
        conv_dims = list(conv_dims)
        if len(conv_dims) == 0:
            raise ValueError("StandardRPNHead: conv_dims must name at least one conv")
        channels = in_channels
        convs = []
        for dim in conv_dims:
            out_channels = channels if dim == -1 else dim
            if out_channels <= 0:
                raise ValueError("StandardRPNHead: conv output channels must be > 0 (or -1), "
                                 f"got {out_channels}")
            convs.append(_hidden_conv(channels, out_channels))
            channels = out_channels
        if len(convs) == 1:
            self.conv = convs[0]
        else:
            self.conv = nn.Sequential()
            for k, conv in enumerate(convs):
                self.conv.add_module(f"conv{k}", conv)
        self.objectness_logits = nn.Conv2d(channels, num_anchors, kernel_size=1, stride=1)
        self.anchor_deltas = nn.Conv2d(channels, num_anchors * box_dim, kernel_size=1, stride=1)
        # after torch's default init of every conv, each conv in module order: N(0, 0.01), bias 0
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.normal_(module.weight, std=0.01)
                nn.init.constant_(module.bias, 0)

    @classmethod
    def from_config(cls, cfg, input_shape):
        channels = {shape.channels for shape in input_shape}
        if len(channels) != 1:
            raise ValueError("StandardRPNHead: every feature map must have the same number of "
                             f"channels, got {sorted(channels)}")
        # the anchors per cell as the RPN's anchor generator makes them
        anchor_generator = build_anchor_generator(cfg, input_shape)
        num_anchors = set(anchor_generator.num_anchors)
        if len(num_anchors) != 1:
            raise ValueError("StandardRPNHead: every feature map must have the same number of "
                             f"anchors per cell, got {anchor_generator.num_anchors}")
        return {"in_channels": channels.pop(), "num_anchors": num_anchors.pop(),
                "box_dim": anchor_generator.box_dim, "conv_dims": list(cfg.MODEL.RPN.CONV_DIMS)}

    def forward(self, features: List[torch.Tensor]):
        """features: L maps (N, C, Hi, Wi). Returns L objectness logits (N, A, Hi, Wi) and L
        deltas (N, A * box_dim, Hi, Wi)."""
        logits = []
        deltas = []
        for x in features:
            hidden = self.conv(x)
            logits.append(self.objectness_logits(hidden))
            deltas.append(self.anchor_deltas(hidden))
        return logits, deltas
