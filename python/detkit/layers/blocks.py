"""Detectron2's CNN building blocks (detectron2.layers.blocks): CNNBlockBase (a block that can be
frozen) and DepthwiseSeparableConv2d."""
from torch import nn

from .batch_norm import FrozenBatchNorm2d, get_norm
from .conv import Conv2d
from .weight_init import c2_msra_fill as msra_fill


class CNNBlockBase(nn.Module):
    """A block with in_channels, out_channels and stride attributes."""

    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.in_channels, self.out_channels, self.stride = in_channels, out_channels, stride

    def freeze(self):
        """No gradient to any parameter, and every BatchNorm made a FrozenBatchNorm2d; returns
        the block."""
        for parameter in self.parameters():
            parameter.requires_grad = False
        FrozenBatchNorm2d.convert_frozen_batchnorm(self)
        return self


class DepthwiseSeparableConv2d(nn.Module):
    """A k x k depthwise conv (norm1, activation1) then a 1 x 1 pointwise conv (norm2,
    activation2); a conv has a bias only without a norm."""

    def __init__(self, in_channels, out_channels, kernel_size=3, padding=1, dilation=1, *,
                 norm1=None, activation1=None, norm2=None, activation2=None):
        super().__init__()
        self.depthwise = Conv2d(in_channels, in_channels, kernel_size=kernel_size,
                                padding=padding, dilation=dilation, groups=in_channels,
                                bias=not norm1, norm=get_norm(norm1, in_channels),
                                activation=activation1)
        self.pointwise = Conv2d(in_channels, out_channels, kernel_size=1, bias=not norm2,
                                norm=get_norm(norm2, out_channels), activation=activation2)
        msra_fill(self.depthwise)
        msra_fill(self.pointwise)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))
