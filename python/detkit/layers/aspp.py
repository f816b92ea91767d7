"""Detectron2's ASPP (detectron2.layers.aspp): atrous spatial pyramid pooling of DeepLabV3: a
1 x 1 conv, one 3 x 3 conv per dilation and an image-pooling branch, concatenated and projected
by a 1 x 1 conv."""
from copy import deepcopy

import torch
from torch import nn
from torch.nn import functional as F

from .batch_norm import get_norm
from .blocks import DepthwiseSeparableConv2d
from .weight_init import c2_xavier_fill as xavier_fill
from .conv import Conv2d


class ASPP(nn.Module):
    def __init__(self, in_channels, out_channels, dilations, *, norm, activation,
                 pool_kernel_size=None, dropout: float = 0.0,
                 use_depthwise_separable_conv=False):
        """dilations: 3 rates; norm: a get_norm value ("" for none, then the convs have a
        bias); activation: a module, copied for every conv; pool_kernel_size: None for global
        average pooling, else (kh, kw) of a stride-1 average pooling."""
        super().__init__()
        if len(dilations) != 3:
            raise ValueError(f"ASPP takes 3 dilations, got {len(dilations)}")
        self.pool_kernel_size = pool_kernel_size
        self.dropout = dropout
        bias = norm == ""

        def conv(cin, kernel, dilation):
            return Conv2d(cin, out_channels, kernel_size=kernel, padding=dilation if kernel > 1
                          else 0, dilation=dilation, bias=bias, norm=get_norm(norm, out_channels),
                          activation=deepcopy(activation))

        self.convs = nn.ModuleList([conv(in_channels, 1, 1)])
        xavier_fill(self.convs[0])
        for dilation in dilations:
            if use_depthwise_separable_conv:
                self.convs.append(DepthwiseSeparableConv2d(
                    in_channels, out_channels, kernel_size=3, padding=dilation,
                    dilation=dilation, norm1=norm, activation1=deepcopy(activation),
                    norm2=norm, activation2=deepcopy(activation)))
            else:
                self.convs.append(conv(in_channels, 3, dilation))
                xavier_fill(self.convs[-1])
        pool = nn.AdaptiveAvgPool2d(1) if pool_kernel_size is None else \
            nn.AvgPool2d(kernel_size=pool_kernel_size, stride=1)
        pooled_conv = Conv2d(in_channels, out_channels, 1, bias=True,
                             activation=deepcopy(activation))
        xavier_fill(pooled_conv)
        self.convs.append(nn.Sequential(pool, pooled_conv))
        self.project = conv(5 * out_channels, 1, 1)
        xavier_fill(self.project)

    def forward(self, x):
        size = x.shape[-2:]
        if self.pool_kernel_size is not None and (
                size[0] % self.pool_kernel_size[0] or size[1] % self.pool_kernel_size[1]):
            raise ValueError(f"ASPP: input size {tuple(size)} is not divisible by "
                             f"pool_kernel_size {tuple(self.pool_kernel_size)}")
        branches = [c(x) for c in self.convs]
        branches[-1] = F.interpolate(branches[-1], size=size, mode="bilinear",
                                     align_corners=False)
        out = self.project(torch.cat(branches, dim=1))
        return F.dropout(out, self.dropout, training=self.training) if self.dropout > 0 else out
