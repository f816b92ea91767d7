"""The DeepLab ResNet: DeepLabStem (three 3x3 convs) and res4 / res5 dilated instead of strided,
res5's blocks at multi-grid dilations; built by build_resnet_deeplab_backbone (registered in
BACKBONE_REGISTRY)."""
from torch.nn import functional as F

from ...layers import CNNBlockBase, Conv2d, c2_msra_fill, get_norm
from ...modeling import BACKBONE_REGISTRY
from ...modeling.backbone.resnet import (BasicStem, BottleneckBlock, DeformBottleneckBlock,
                                         ResNet)

__all__ = ["DeepLabStem", "build_resnet_deeplab_backbone"]

_BLOCKS_PER_STAGE = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}
_STAGE_OF_FEATURE = {"res2": 2, "res3": 3, "res4": 4, "res5": 5}


def _conv3x3_norm(in_channels, out_channels, stride, norm):
    return Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1,
                  bias=False, norm=get_norm(norm, out_channels))


class DeepLabStem(CNNBlockBase):
    """3x3 convs (stride 2, then 1, 1) to out_channels / 2, out_channels / 2 and out_channels,
    each with norm and ReLU, then a 3x3 stride-2 max pool: stride 4."""

    def __init__(self, in_channels=3, out_channels=128, norm="BN"):
        super().__init__(in_channels, out_channels, 4)
        self.in_channels = in_channels
        half = out_channels // 2
        self.conv1 = _conv3x3_norm(in_channels, half, 2, norm)
        self.conv2 = _conv3x3_norm(half, half, 1, norm)
        self.conv3 = _conv3x3_norm(half, out_channels, 1, norm)
        for conv in (self.conv1, self.conv2, self.conv3):
            c2_msra_fill(conv)

    def forward(self, x):
        x = F.relu_(self.conv1(x))
        x = F.relu_(self.conv2(x))
        x = F.relu_(self.conv3(x))
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


def _build_stem(cfg, input_shape):
    r = cfg.MODEL.RESNETS
    stems = {"basic": BasicStem, "deeplab": DeepLabStem}
    if r.STEM_TYPE not in stems:
        raise ValueError(f"Unknown stem type: {r.STEM_TYPE} (MODEL.RESNETS.STEM_TYPE: 'basic' or "
                         "'deeplab')")
    return stems[r.STEM_TYPE](in_channels=input_shape.channels,
                              out_channels=r.STEM_OUT_CHANNELS, norm=r.NORM)


@BACKBONE_REGISTRY.register()
def build_resnet_deeplab_backbone(cfg, input_shape):
    """The ResNet-50/101/152 of cfg.MODEL.RESNETS (add_deeplab_config's keys): STEM_TYPE's stem,
    res4 dilated by RES4_DILATION (1 or 2), res5 by RES5_DILATION (1, 2 or 4; 4 when res4 is
    dilated) times RES5_MULTI_GRID per block. Stages after the last of OUT_FEATURES are not
    built; frozen up to cfg.MODEL.BACKBONE.FREEZE_AT."""
    stem = _build_stem(cfg, input_shape)
    r = cfg.MODEL.RESNETS
    res4_dilation, res5_dilation = r.RES4_DILATION, r.RES5_DILATION
    assert res4_dilation in {1, 2}, f"res4_dilation cannot be {res4_dilation}."
    assert res5_dilation in {1, 2, 4}, f"res5_dilation cannot be {res5_dilation}."
    if res4_dilation == 2:
        assert res5_dilation == 4, "res5_dilation must be 4 when res4_dilation is 2."
    blocks_per_stage = _BLOCKS_PER_STAGE[r.DEPTH]
    dilation_of_stage = {4: res4_dilation, 5: res5_dilation}
    last_stage = max(_STAGE_OF_FEATURE[f] for f in r.OUT_FEATURES)
    in_channels, out_channels = r.STEM_OUT_CHANNELS, r.RES2_OUT_CHANNELS
    bottleneck_channels = r.NUM_GROUPS * r.WIDTH_PER_GROUP
    stages = []
    for index, stage in enumerate(range(2, last_stage + 1)):
        count = blocks_per_stage[index]
        dilation = dilation_of_stage.get(stage, 1)
        first_stride = 1 if index == 0 or dilation > 1 else 2
        arguments = dict(num_blocks=count, stride_per_block=[first_stride] + [1] * (count - 1),
                         in_channels=in_channels, out_channels=out_channels, norm=r.NORM,
                         bottleneck_channels=bottleneck_channels, stride_in_1x1=r.STRIDE_IN_1X1,
                         num_groups=r.NUM_GROUPS, block_class=BottleneckBlock)
        if r.DEFORM_ON_PER_STAGE[index]:
            arguments.update(block_class=DeformBottleneckBlock,
                             deform_modulated=r.DEFORM_MODULATED,
                             deform_num_groups=r.DEFORM_NUM_GROUPS)
        if stage == 5:
            arguments["dilation_per_block"] = [dilation * grid for grid in r.RES5_MULTI_GRID]
        else:
            arguments["dilation"] = dilation
        stages.append(ResNet.make_stage(**arguments))
        in_channels, out_channels = out_channels, out_channels * 2
        bottleneck_channels *= 2
    return ResNet(stem, stages, out_features=r.OUT_FEATURES).freeze(cfg.MODEL.BACKBONE.FREEZE_AT)
