"""DeformConv and ModulatedDeformConv as Detectron2's (detectron2.layers.deform_conv) over detkit's
deformable convolution (torch.ops.detkit.deform_conv2d, torchvision's semantics, with its
gradients): offsets (N, 2 * deformable_groups * kh * kw, H', W'), masks (N, deformable_groups *
kh * kw, H', W')."""
import torch
from torch import nn
from torch.nn.modules.utils import _pair


def _output_size(x, weight, stride, padding, dilation):
    sides = []
    for d in range(2):
        kernel = dilation[d] * (weight.shape[d + 2] - 1) + 1
        sides.append((x.shape[d + 2] + 2 * padding[d] - kernel) // stride[d] + 1)
    return sides


class _DeformConvBase(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                 deformable_groups, bias, norm, activation):
        super().__init__()
        if in_channels % groups != 0 or out_channels % groups != 0:
            raise ValueError(f"{type(self).__name__}: in_channels {in_channels} and out_channels "
                             f"{out_channels} must be divisible by groups {groups}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.groups, self.deformable_groups = groups, deformable_groups
        self.norm, self.activation = norm, activation
        self.weight = nn.Parameter(
            torch.Tensor(out_channels, in_channels // groups, *_pair(kernel_size)))
        nn.init.kaiming_uniform_(self.weight, nonlinearity="relu")
        self.bias = None
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_channels))

    def _run(self, x, offset, mask):
        stride, padding, dilation = _pair(self.stride), _pair(self.padding), _pair(self.dilation)
        kernel_points = self.weight.shape[2] * self.weight.shape[3]
        if offset.shape[1] != 2 * self.deformable_groups * kernel_points:
            raise RuntimeError(f"{type(self).__name__}: the offset has {offset.shape[1]} channels; "
                               f"{2 * self.deformable_groups * kernel_points} expected (2 x "
                               f"deformable_groups x kernel points)")
        if mask is not None and mask.shape[1] != self.deformable_groups * kernel_points:
            raise RuntimeError(f"{type(self).__name__}: the mask has {mask.shape[1]} channels; "
                               f"{self.deformable_groups * kernel_points} expected "
                               "(deformable_groups x kernel points)")
        if x.numel() == 0:
            height, width = _output_size(x, self.weight, stride, padding, dilation)
            out = x.new_empty((x.shape[0], self.weight.shape[0], height, width))
        else:
            out = torch.ops.detkit.deform_conv2d(x, self.weight, offset, mask, self.bias,
                                                 stride[0], stride[1], padding[0], padding[1],
                                                 dilation[0], dilation[1], self.groups,
                                                 self.deformable_groups)
        if self.norm is not None:
            out = self.norm(out)
        if self.activation is not None:
            out = self.activation(out)
        return out

    def extra_repr(self):  # stride, padding, dilation as each subclass keeps them (Detectron2's)
        return (f"in_channels={self.in_channels}, out_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, groups={self.groups}, "
                f"deformable_groups={self.deformable_groups}, bias={self.bias is not None}")

    def __repr__(self):
        return f"{type(self).__name__}({self.extra_repr()})"


class DeformConv(_DeformConvBase):
    """Deformable convolution v1 (no bias by default, as Detectron2's)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, deformable_groups=1, bias=False, norm=None, activation=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, deformable_groups, bias, norm, activation)
        self.kernel_size = _pair(kernel_size)
        self.stride, self.padding, self.dilation = _pair(stride), _pair(padding), _pair(dilation)

    def forward(self, x, offset):
        return self._run(x, offset, None)


class ModulatedDeformConv(_DeformConvBase):
    """Deformable convolution v2: sampled values weighted by a mask (bias by default)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, deformable_groups=1, bias=True, norm=None, activation=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, deformable_groups, bias, norm, activation)
        self.kernel_size = _pair(kernel_size)
        self.stride, self.padding, self.dilation = stride, padding, dilation

    def forward(self, x, offset, mask):
        return self._run(x, offset, mask)
