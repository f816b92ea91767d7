"""The ResNet stem and residual blocks of Detectron2 (detectron2.modeling.backbone.resnet), with
its parameter names (conv1, conv2, conv3, shortcut, conv2_offset, each conv's `norm`) and its
initialisation, drawn from torch's generator in the same order."""
import torch
from torch.nn import functional as F

from ...layers import (CNNBlockBase, Conv2d, DeformConv, ModulatedDeformConv, c2_msra_fill,
                       get_norm)

__all__ = ["BasicStem", "BasicBlock", "BottleneckBlock", "DeformBottleneckBlock"]


def _conv_norm(in_channels, out_channels, kernel_size, norm, stride=1, dilation=1, groups=1):
    """A bias-free Conv2d ("same" padding for odd kernels at this dilation) followed by `norm`."""
    return Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                  padding=dilation * (kernel_size // 2), dilation=dilation, groups=groups,
                  bias=False, norm=get_norm(norm, out_channels))


def _projection(in_channels, out_channels, stride, norm):
    """The 1x1 strided projection of the input when the channels change, else None."""
    if in_channels == out_channels:
        return None
    return _conv_norm(in_channels, out_channels, 1, norm, stride=stride)


def _msra_fill_all(layers):
    for layer in layers:
        if layer is not None:
            c2_msra_fill(layer)


class _ResidualBlock(CNNBlockBase):
    """A block ending in ReLU(branch + input), the input through `self.shortcut` when set."""

    def _add_input(self, out, x):
        if self.shortcut is not None:
            out += self.shortcut(x)
        else:
            out += x
        return F.relu_(out)


class BasicStem(CNNBlockBase):
    """7x7 stride-2 conv, norm, ReLU, then a 3x3 stride-2 max pool: stride 4."""

    def __init__(self, in_channels=3, out_channels=64, norm="BN"):
        super().__init__(in_channels, out_channels, 4)
        self.conv1 = _conv_norm(in_channels, out_channels, 7, norm, stride=2)
        c2_msra_fill(self.conv1)

    def forward(self, x):
        x = F.relu_(self.conv1(x))
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


class BasicBlock(_ResidualBlock):
    """Two 3x3 convs (the first strided) plus the input, or its projection when the channels
    change (ResNet-18 / 34)."""

    def __init__(self, in_channels, out_channels, *, stride=1, norm="BN"):
        super().__init__(in_channels, out_channels, stride)
        self.shortcut = _projection(in_channels, out_channels, stride, norm)
        self.conv1 = _conv_norm(in_channels, out_channels, 3, norm, stride=stride)
        self.conv2 = _conv_norm(out_channels, out_channels, 3, norm)
        _msra_fill_all([self.conv1, self.conv2, self.shortcut])

    def forward(self, x):
        out = self.conv2(F.relu_(self.conv1(x)))
        return self._add_input(out, x)


class BottleneckBlock(_ResidualBlock):
    """1x1 reduce, 3x3 (grouped, dilated) and 1x1 expand convs plus the input or its projection
    (ResNet-50 and deeper). The stride sits on the first 1x1 conv when stride_in_1x1 (MSRA's
    original models), else on the 3x3 conv."""

    def __init__(self, in_channels, out_channels, *, bottleneck_channels, stride=1,
                 num_groups=1, norm="BN", stride_in_1x1=False, dilation=1):
        super().__init__(in_channels, out_channels, stride)
        self.shortcut = _projection(in_channels, out_channels, stride, norm)
        stride_1x1, stride_3x3 = (stride, 1) if stride_in_1x1 else (1, stride)
        self.conv1 = _conv_norm(in_channels, bottleneck_channels, 1, norm, stride=stride_1x1)
        self.conv2 = _conv_norm(bottleneck_channels, bottleneck_channels, 3, norm,
                                stride=stride_3x3, dilation=dilation, groups=num_groups)
        self.conv3 = _conv_norm(bottleneck_channels, out_channels, 1, norm)
        # Detectron2 leaves conv3's norm at weight 1 (no zero init of the last norm)
        _msra_fill_all([self.conv1, self.conv2, self.conv3, self.shortcut])

    def forward(self, x):
        out = F.relu_(self.conv1(x))
        out = F.relu_(self.conv2(out))
        out = self.conv3(out)
        return self._add_input(out, x)


class DeformBottleneckBlock(_ResidualBlock):
    """BottleneckBlock whose 3x3 conv is deformable: its sampling offsets (and, when
    deform_modulated, the sigmoid masks) come from conv2_offset, initialised to zero, so the
    block starts as a plain bottleneck."""

    def __init__(self, in_channels, out_channels, *, bottleneck_channels, stride=1,
                 num_groups=1, norm="BN", stride_in_1x1=False, dilation=1,
                 deform_modulated=False, deform_num_groups=1):
        super().__init__(in_channels, out_channels, stride)
        self.deform_modulated = deform_modulated
        self.shortcut = _projection(in_channels, out_channels, stride, norm)
        stride_1x1, stride_3x3 = (stride, 1) if stride_in_1x1 else (1, stride)
        self.conv1 = _conv_norm(in_channels, bottleneck_channels, 1, norm, stride=stride_1x1)
        # per deformable group and kernel point: (dy, dx), plus a mask value when modulated
        values_per_point = 3 if deform_modulated else 2
        self.conv2_offset = Conv2d(bottleneck_channels, values_per_point * 9 * deform_num_groups,
                                   kernel_size=3, stride=stride_3x3, padding=dilation,
                                   dilation=dilation)
        deform_conv = ModulatedDeformConv if deform_modulated else DeformConv
        self.conv2 = deform_conv(bottleneck_channels, bottleneck_channels, kernel_size=3,
                                 stride=stride_3x3, padding=dilation, bias=False,
                                 groups=num_groups, dilation=dilation,
                                 deformable_groups=deform_num_groups,
                                 norm=get_norm(norm, bottleneck_channels))
        self.conv3 = _conv_norm(bottleneck_channels, out_channels, 1, norm)
        _msra_fill_all([self.conv1, self.conv2, self.conv3, self.shortcut])
        torch.nn.init.constant_(self.conv2_offset.weight, 0)
        torch.nn.init.constant_(self.conv2_offset.bias, 0)

    def forward(self, x):
        out = F.relu_(self.conv1(x))
        if self.deform_modulated:
            offset_x, offset_y, mask = torch.chunk(self.conv2_offset(out), 3, dim=1)
            out = self.conv2(out, torch.cat((offset_x, offset_y), dim=1), mask.sigmoid())
        else:
            out = self.conv2(out, self.conv2_offset(out))
        out = self.conv3(F.relu_(out))
        return self._add_input(out, x)
