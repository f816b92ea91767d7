"""ResNet as Detectron2's (detectron2.modeling.backbone.resnet): a stem and stages res2..res5 of
residual blocks, built from the config by build_resnet_backbone (registered in
BACKBONE_REGISTRY). Stages after the last requested feature are not built; the first
FREEZE_AT stages (the stem is 1) are frozen with FrozenBatchNorm2d."""
import math
from copy import deepcopy

import torch
from torch import nn

from ...layers import CNNBlockBase
from .backbone import Backbone
from .build import BACKBONE_REGISTRY
from .resnet_blocks import BasicBlock, BasicStem, BottleneckBlock, DeformBottleneckBlock

__all__ = ["ResNetBlockBase", "BasicBlock", "BottleneckBlock", "DeformBottleneckBlock",
           "BasicStem", "ResNet", "make_stage", "build_resnet_backbone"]

ResNetBlockBase = CNNBlockBase  # Detectron2's older name

# blocks in res2..res5 for each depth
_BLOCKS_PER_STAGE = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3],
                     152: [3, 8, 36, 3]}
_STAGE_INDEX = {"res2": 1, "res3": 2, "res4": 3, "res5": 4}


def _blocks_per_stage(depth):
    if depth not in _BLOCKS_PER_STAGE:
        raise KeyError(f"ResNet depth {depth} is not one of "
                       f"{', '.join(str(d) for d in _BLOCKS_PER_STAGE)}")
    return _BLOCKS_PER_STAGE[depth]


class ResNet(Backbone):
    """A stem, then stages named res2, res3, ... (nn.Sequential of CNNBlockBase blocks), and a
    linear classifier ("linear", after global average pooling) when num_classes is set.
    forward gives {name: output} for the names in out_features ("stem", "res<k>", "linear";
    by default the last one)."""

    def __init__(self, stem, stages, num_classes=None, out_features=None, freeze_at=0):
        super().__init__()
        self.stem = stem
        self.num_classes = num_classes
        stride, channels = stem.stride, stem.out_channels
        self._out_feature_strides = {"stem": stride}
        self._out_feature_channels = {"stem": channels}
        if out_features is not None:  # stages no requested feature needs are left out
            stages = stages[:max([_STAGE_INDEX.get(f, 0) for f in out_features], default=0)]
        names, modules = [], []
        last = "stem"
        for index, blocks in enumerate(stages):
            assert len(blocks) > 0, f"ResNet: stage {index + 2} has no blocks"
            for block in blocks:
                assert isinstance(block, CNNBlockBase), \
                    f"ResNet: a stage block must be a CNNBlockBase, not {type(block).__name__}"
            last = f"res{index + 2}"
            stage = nn.Sequential(*blocks)
            self.add_module(last, stage)
            names.append(last)
            modules.append(stage)
            stride = int(stride * math.prod(block.stride for block in blocks))
            channels = blocks[-1].out_channels
            self._out_feature_strides[last] = stride
            self._out_feature_channels[last] = channels
        # a tuple of names and a plain list of the same stage modules: scriptable, and the
        # parameters keep their res<k> names only
        self.stage_names = tuple(names)
        self.stages = modules
        if num_classes is not None:
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.linear = nn.Linear(channels, num_classes)
            nn.init.normal_(self.linear.weight, std=0.01)
            last = "linear"
        self._out_features = [last] if out_features is None else out_features
        assert len(self._out_features), "ResNet: out_features is empty"
        children = [name for name, _ in self.named_children()]
        for name in self._out_features:
            assert name in children, \
                f"ResNet: unknown out_features name '{name}'. Available: {', '.join(children)}"
        self.freeze(freeze_at)

    def forward(self, x):
        """x: (N, C, H, W). Returns {name: feature} for each of out_features."""
        assert x.dim() == 4, f"ResNet takes an input of shape (N, C, H, W). Got {x.shape} instead!"
        outputs = {}
        x = self.stem(x)
        if "stem" in self._out_features:
            outputs["stem"] = x
        for name, stage in zip(self.stage_names, self.stages):
            x = stage(x)
            if name in self._out_features:
                outputs[name] = x
        if self.num_classes is not None:
            x = self.linear(torch.flatten(self.avgpool(x), 1))
            if "linear" in self._out_features:
                outputs["linear"] = x
        return outputs

    def __prepare_scriptable__(self):
        """What torch.jit.script compiles: a copy whose stages are one nn.ModuleList (TorchScript
        cannot iterate a list of modules); its parameters are named stages.<i>... there."""
        scriptable = deepcopy(self)
        scriptable.stages = nn.ModuleList(scriptable.stages)
        for name in self.stage_names:
            delattr(scriptable, name)
        return scriptable

    def freeze(self, freeze_at=0):
        """Freezes the stem (freeze_at >= 1) and the first freeze_at - 1 stages: no gradients,
        BatchNorm replaced by FrozenBatchNorm2d. Returns self."""
        if freeze_at >= 1:
            self.stem.freeze()
        for index, stage in enumerate(self.stages, start=2):
            if freeze_at >= index:
                for block in stage.children():
                    block.freeze()
        return self

    @staticmethod
    def make_stage(block_class, num_blocks, *, in_channels, out_channels, **kwargs):
        """A list of num_blocks block_class blocks, the first taking in_channels, all giving
        out_channels. A keyword `<name>_per_block` gives block i the value [i] as `<name>`;
        other keywords go to every block."""
        per_block = {}
        shared = {}
        for key, value in kwargs.items():
            if not key.endswith("_per_block"):
                shared[key] = value
                continue
            name = key[:-len("_per_block")]
            assert len(value) == num_blocks, \
                f"Argument '{key}' of make_stage should have the same length as " \
                f"num_blocks={num_blocks}."
            assert name not in kwargs, f"Cannot call make_stage with both {key} and {name}!"
            per_block[name] = value
        blocks = []
        for i in range(num_blocks):
            arguments = dict(shared, **{name: values[i] for name, values in per_block.items()})
            blocks.append(block_class(in_channels=in_channels, out_channels=out_channels,
                                      **arguments))
            in_channels = out_channels
        return blocks

    @staticmethod
    def make_default_stages(depth, block_class=None, **kwargs):
        """The four stages of ResNet-<depth> (18, 34, 50, 101, 152) with the standard widths and
        strides; block_class defaults to BasicBlock below depth 50, else BottleneckBlock (given
        bottleneck_channels = out_channels / 4). kwargs go to make_stage."""
        blocks_per_stage = _blocks_per_stage(depth)
        if block_class is None:
            block_class = BasicBlock if depth < 50 else BottleneckBlock
        if depth < 50:
            in_channels, out_channels = [64, 64, 128, 256], [64, 128, 256, 512]
        else:
            in_channels, out_channels = [64, 256, 512, 1024], [256, 512, 1024, 2048]
        stages = []
        for count, first_stride, ins, outs in zip(blocks_per_stage, [1, 2, 2, 2], in_channels,
                                                  out_channels):
            if depth >= 50:
                kwargs["bottleneck_channels"] = outs // 4
            stages.append(ResNet.make_stage(
                block_class=block_class, num_blocks=count,
                stride_per_block=[first_stride] + [1] * (count - 1), in_channels=ins,
                out_channels=outs, **kwargs))
        return stages


def make_stage(*args, **kwargs):
    """ResNet.make_stage (Detectron2's older module-level name)."""
    return ResNet.make_stage(*args, **kwargs)


@BACKBONE_REGISTRY.register()
def build_resnet_backbone(cfg, input_shape):
    """The ResNet cfg.MODEL.RESNETS describes (depth, groups and width, norm, stride_in_1x1,
    res5 dilation, deformable stages), frozen up to cfg.MODEL.BACKBONE.FREEZE_AT."""
    r = cfg.MODEL.RESNETS
    norm, depth = r.NORM, r.DEPTH
    stem = BasicStem(in_channels=input_shape.channels, out_channels=r.STEM_OUT_CHANNELS,
                     norm=norm)
    res5_dilation = r.RES5_DILATION
    assert res5_dilation in {1, 2}, f"res5_dilation cannot be {res5_dilation}."
    blocks_per_stage = _blocks_per_stage(depth)
    in_channels, out_channels = r.STEM_OUT_CHANNELS, r.RES2_OUT_CHANNELS
    bottleneck_channels = r.NUM_GROUPS * r.WIDTH_PER_GROUP
    deform_on = r.DEFORM_ON_PER_STAGE
    if depth in (18, 34):
        assert out_channels == 64, "Must set MODEL.RESNETS.RES2_OUT_CHANNELS = 64 for R18/R34"
        assert not any(deform_on), "MODEL.RESNETS.DEFORM_ON_PER_STAGE unsupported for R18/R34"
        assert res5_dilation == 1, "Must set MODEL.RESNETS.RES5_DILATION = 1 for R18/R34"
        assert r.NUM_GROUPS == 1, "Must set MODEL.RESNETS.NUM_GROUPS = 1 for R18/R34"
    stages = []
    for index, count in enumerate(blocks_per_stage):
        dilated = index == 3 and res5_dilation == 2  # res5 dilated instead of strided
        first_stride = 1 if index == 0 or dilated else 2
        arguments = dict(num_blocks=count, stride_per_block=[first_stride] + [1] * (count - 1),
                         in_channels=in_channels, out_channels=out_channels, norm=norm)
        if depth in (18, 34):
            arguments["block_class"] = BasicBlock
        else:
            arguments.update(bottleneck_channels=bottleneck_channels,
                             stride_in_1x1=r.STRIDE_IN_1X1,
                             dilation=res5_dilation if index == 3 else 1,
                             num_groups=r.NUM_GROUPS, block_class=BottleneckBlock)
            if deform_on[index]:
                arguments.update(block_class=DeformBottleneckBlock,
                                 deform_modulated=r.DEFORM_MODULATED,
                                 deform_num_groups=r.DEFORM_NUM_GROUPS)
        stages.append(ResNet.make_stage(**arguments))
        in_channels, out_channels = out_channels, out_channels * 2
        bottleneck_channels *= 2
    return ResNet(stem, stages, out_features=r.OUT_FEATURES,
                  freeze_at=cfg.MODEL.BACKBONE.FREEZE_AT)
