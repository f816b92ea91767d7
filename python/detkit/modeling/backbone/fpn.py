"""FPN as Detectron2's (detectron2.modeling.backbone.fpn): lateral 1x1 and output 3x3 convs
(fpn_lateral<k>, fpn_output<k>) over a bottom-up backbone's features, a top-down pass adding
each coarser level upsampled x2, and an optional top block adding coarser levels (max-pooled P6,
or RetinaNet's P6 / P7 convs). Builders for ResNet-FPN are registered in BACKBONE_REGISTRY."""
import math
from copy import deepcopy

import torch
from torch import nn
from torch.nn import functional as F

from ...layers import Conv2d, ShapeSpec, c2_xavier_fill, get_norm
from .backbone import Backbone
from .build import BACKBONE_REGISTRY
from .resnet import build_resnet_backbone

__all__ = ["build_resnet_fpn_backbone", "build_retinanet_resnet_fpn_backbone", "FPN",
           "LastLevelMaxPool", "LastLevelP6P7"]


def _check_strides_double(strides):
    for finer, coarser in zip(strides, strides[1:]):
        assert coarser == 2 * finer, f"Strides {coarser} {finer} are not log2 contiguous"


class FPN(Backbone):
    """Pyramid features p<k> (stride 2^k, out_channels each) from bottom_up's in_features
    (finest first, strides doubling), plus top_block's levels. fuse_type "sum" adds the lateral
    and the upsampled coarser level, "avg" averages them; norm applies to every conv (which
    then has no bias). square_pad > 0 asks for inputs padded to that square."""

    _fuse_type: torch.jit.Final[str]

    def __init__(self, bottom_up, in_features, out_channels, norm="", top_block=None,
                 fuse_type="sum", square_pad=0):
        super().__init__()
        assert isinstance(bottom_up, Backbone), \
            f"FPN: bottom_up must be a Backbone, not {type(bottom_up).__name__}"
        assert in_features, "FPN: in_features is empty"
        assert fuse_type in {"avg", "sum"}, f"FPN: fuse_type '{fuse_type}' is not sum or avg"
        shapes = bottom_up.output_shape()
        for name in in_features:
            assert name in shapes, \
                f"FPN: bottom_up has no output '{name}' (outputs: {', '.join(shapes)})"
        strides = [shapes[name].stride for name in in_features]
        _check_strides_double(strides)
        with_bias = norm == ""
        laterals, outputs = [], []
        for name, stride in zip(in_features, strides):
            lateral_norm, output_norm = get_norm(norm, out_channels), get_norm(norm, out_channels)
            lateral = Conv2d(shapes[name].channels, out_channels, kernel_size=1, bias=with_bias,
                             norm=lateral_norm)
            output = Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1,
                            bias=with_bias, norm=output_norm)
            c2_xavier_fill(lateral)
            c2_xavier_fill(output)
            level = int(math.log2(stride))
            self.add_module(f"fpn_lateral{level}", lateral)
            self.add_module(f"fpn_output{level}", output)
            laterals.append(lateral)
            outputs.append(output)
        # coarsest first, the order of the top-down pass (plain lists: the convs keep their
        # fpn_* names only)
        self.lateral_convs = laterals[::-1]
        self.output_convs = outputs[::-1]
        self.top_block = top_block
        self.in_features = tuple(in_features)
        self.bottom_up = bottom_up
        self._out_feature_strides = {f"p{int(math.log2(s))}": s for s in strides}
        if top_block is not None:
            coarsest = int(math.log2(strides[-1]))
            for level in range(coarsest + 1, coarsest + 1 + top_block.num_levels):
                self._out_feature_strides[f"p{level}"] = 2 ** level
        self._out_features = list(self._out_feature_strides)
        self._out_feature_channels = {name: out_channels for name in self._out_features}
        self._size_divisibility = strides[-1]
        self._square_pad = square_pad
        self._fuse_type = fuse_type

    @property
    def size_divisibility(self):
        return self._size_divisibility

    @property
    def padding_constraints(self):
        return {"square_size": self._square_pad}

    def forward(self, x):
        """x: the images (N, C, H, W). Returns {"p<k>": feature}, finest first."""
        bottom_up_features = self.bottom_up(x)
        # top-down: coarsest level first; each finer one is its lateral plus the previous
        # level upsampled x2 (averaged for "avg")
        coarse_to_fine = []
        previous = self.lateral_convs[0](bottom_up_features[self.in_features[-1]])
        coarse_to_fine.append(self.output_convs[0](previous))
        for index, (lateral_conv, output_conv) in enumerate(zip(self.lateral_convs,
                                                                 self.output_convs)):
            # the coarsest level is done above (TorchScript can neither slice a ModuleList nor
            # `continue` in a loop over one)
            if index > 0:
                lateral = lateral_conv(bottom_up_features[self.in_features[-1 - index]])
                previous = lateral + F.interpolate(previous, scale_factor=2.0, mode="nearest")
                if self._fuse_type == "avg":
                    previous /= 2
                coarse_to_fine.append(output_conv(previous))
        results = coarse_to_fine[::-1]
        if self.top_block is not None:
            source = self.top_block.in_feature
            if source in bottom_up_features:
                top_input = bottom_up_features[source]
            else:
                top_input = results[self._out_features.index(source)]
            results.extend(self.top_block(top_input))
        assert len(self._out_features) == len(results)
        return {name: result for name, result in zip(self._out_features, results)}

    def __prepare_scriptable__(self):
        """What torch.jit.script compiles: a copy whose lateral and output convs are
        nn.ModuleLists (TorchScript cannot iterate lists of modules) instead of fpn_* children."""
        scriptable = deepcopy(self)
        scriptable.lateral_convs = nn.ModuleList(scriptable.lateral_convs)
        scriptable.output_convs = nn.ModuleList(scriptable.output_convs)
        for name, _ in self.named_children():
            if name.startswith("fpn_"):
                delattr(scriptable, name)
        return scriptable


class LastLevelMaxPool(nn.Module):
    """P6 from P5 by a 1x1 max pool of stride 2 (the original FPN)."""

    def __init__(self):
        super().__init__()
        self.num_levels = 1
        self.in_feature = "p5"

    def forward(self, x):
        return [F.max_pool2d(x, kernel_size=1, stride=2, padding=0)]


class LastLevelP6P7(nn.Module):
    """RetinaNet's P6 (3x3 stride-2 conv of in_feature, res5 by default) and P7 (3x3 stride-2
    conv of ReLU(P6))."""

    def __init__(self, in_channels, out_channels, in_feature="res5"):
        super().__init__()
        self.num_levels = 2
        self.in_feature = in_feature
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        c2_xavier_fill(self.p6)
        c2_xavier_fill(self.p7)

    def forward(self, c5):
        p6 = self.p6(c5)
        return [p6, self.p7(F.relu(p6))]


def _resnet_fpn(cfg, bottom_up, top_block):
    fpn = cfg.MODEL.FPN
    return FPN(bottom_up=bottom_up, in_features=fpn.IN_FEATURES, out_channels=fpn.OUT_CHANNELS,
               norm=fpn.NORM, top_block=top_block, fuse_type=fpn.FUSE_TYPE)


@BACKBONE_REGISTRY.register()
def build_resnet_fpn_backbone(cfg, input_shape: ShapeSpec):
    """ResNet (build_resnet_backbone) + FPN (cfg.MODEL.FPN) with a max-pooled P6."""
    bottom_up = build_resnet_backbone(cfg, input_shape)
    return _resnet_fpn(cfg, bottom_up, LastLevelMaxPool())


@BACKBONE_REGISTRY.register()
def build_retinanet_resnet_fpn_backbone(cfg, input_shape: ShapeSpec):
    """ResNet + FPN with RetinaNet's P6 / P7 convs on res5."""
    bottom_up = build_resnet_backbone(cfg, input_shape)
    res5_channels = bottom_up.output_shape()["res5"].channels
    top_block = LastLevelP6P7(res5_channels, cfg.MODEL.FPN.OUT_CHANNELS)
    return _resnet_fpn(cfg, bottom_up, top_block)
