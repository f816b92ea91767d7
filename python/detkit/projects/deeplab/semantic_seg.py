"""DeepLab's semantic segmentation heads, registered in SEM_SEG_HEADS_REGISTRY: DeepLabV3Head
(ASPP on one feature, then a 1x1 predictor) and DeepLabV3PlusHead (ASPP on the coarsest feature,
then a decoder fusing finer features projected by 1x1 convs)."""
from typing import Callable, Dict, List, Optional, Tuple, Union

import torch
from torch import nn
from torch.nn import functional as F

from ...config import configurable
from ...layers import (ASPP, Conv2d, DepthwiseSeparableConv2d, ShapeSpec, c2_xavier_fill,
                       get_norm)
from ...modeling import SEM_SEG_HEADS_REGISTRY
from .loss import DeepLabCE

__all__ = ["DeepLabV3Head", "DeepLabV3PlusHead"]


def _build_loss(loss_type, ignore_value):
    """"cross_entropy": mean cross-entropy; "hard_pixel_mining": DeepLabCE over the 20%
    hardest pixels."""
    if loss_type == "cross_entropy":
        return nn.CrossEntropyLoss(reduction="mean", ignore_index=ignore_value)
    if loss_type == "hard_pixel_mining":
        return DeepLabCE(ignore_label=ignore_value, top_k_percent_pixels=0.2)
    raise ValueError(f"Unexpected loss type: {loss_type} ('cross_entropy' or "
                     "'hard_pixel_mining')")


def _pool_kernel_size(train_size, stride):
    """ASPP's image-pool kernel: the training crop at the feature's stride (None: global)."""
    if train_size is None:
        return None
    train_h, train_w = (int(size) for size in train_size)  # detkit's CROP.SIZE holds floats
    if train_h % stride or train_w % stride:
        raise ValueError(f"Crop size {tuple(train_size)} need to be divisible by the output "
                         f"stride {stride}.")
    return (train_h // stride, train_w // stride)


def _new_predictor(in_channels, num_classes):
    """1x1 conv to class logits: weights N(0, 0.001), bias 0."""
    predictor = Conv2d(in_channels, num_classes, kernel_size=1, stride=1, padding=0)
    nn.init.normal_(predictor.weight, 0, 0.001)
    nn.init.constant_(predictor.bias, 0)
    return predictor


def _upsample(x, common_stride):
    return F.interpolate(x, scale_factor=common_stride, mode="bilinear", align_corners=False)


def _crop_size(cfg):
    """cfg.INPUT.CROP.SIZE when cropping is on (it must be "absolute"), else None."""
    if not cfg.INPUT.CROP.ENABLED:
        return None
    assert cfg.INPUT.CROP.TYPE == "absolute", \
        f"DeepLab heads need INPUT.CROP.TYPE 'absolute', got {cfg.INPUT.CROP.TYPE!r}"
    return cfg.INPUT.CROP.SIZE


@SEM_SEG_HEADS_REGISTRY.register()
class DeepLabV3PlusHead(nn.Module):
    """DeepLabV3+: input features sorted by stride; the coarsest goes through ASPP
    (decoder_channels[-1] channels), then from coarse to fine each finer feature is projected
    to project_channels[i], concatenated with the upsampled decoder output and fused by two 3x3
    convs (one 5x5 depthwise-separable conv with use_depthwise_separable_conv) to
    decoder_channels[i]. A 1x1 predictor gives num_classes logits at the finest stride
    (num_classes None: no predictor, forward gives the decoder's features)."""

    @configurable
    def __init__(self, input_shape: Dict[str, ShapeSpec], *, project_channels: List[int],
                 aspp_dilations: List[int], aspp_dropout: float, decoder_channels: List[int],
                 common_stride: int, norm: Union[str, Callable], train_size: Optional[Tuple],
                 loss_weight: float = 1.0, loss_type: str = "cross_entropy",
                 ignore_value: int = -1, num_classes: Optional[int] = None,
                 use_depthwise_separable_conv: bool = False):
        super().__init__()
        shapes = sorted(input_shape.items(), key=lambda item: item[1].stride)
        self.in_features = [name for name, _ in shapes]
        in_channels = [shape.channels for _, shape in shapes]
        coarsest_stride = shapes[-1][1].stride
        self.ignore_value = ignore_value
        self.common_stride = common_stride
        self.loss_weight = loss_weight
        self.loss_type = loss_type
        self.decoder_only = num_classes is None
        self.use_depthwise_separable_conv = use_depthwise_separable_conv
        levels = len(self.in_features)
        assert len(project_channels) == levels - 1, \
            f"Expected {levels - 1} project_channels, got {len(project_channels)}"
        assert len(decoder_channels) == levels, \
            f"Expected {levels} decoder_channels, got {len(decoder_channels)}"

        self.decoder = nn.ModuleDict()
        bias = norm == ""
        for idx, channels in enumerate(in_channels):
            stage = nn.ModuleDict()
            if idx == levels - 1:
                stage["project_conv"] = ASPP(
                    channels, decoder_channels[-1], aspp_dilations, norm=norm,
                    activation=F.relu,
                    pool_kernel_size=_pool_kernel_size(train_size, coarsest_stride),
                    dropout=aspp_dropout,
                    use_depthwise_separable_conv=use_depthwise_separable_conv)
                stage["fuse_conv"] = None
            else:
                stage["project_conv"] = self._projection(channels, project_channels[idx],
                                                         norm, bias)
                stage["fuse_conv"] = self._fusion(
                    project_channels[idx] + decoder_channels[idx + 1], decoder_channels[idx],
                    norm, bias)
            self.decoder[self.in_features[idx]] = stage

        if not self.decoder_only:
            self.predictor = _new_predictor(decoder_channels[0], num_classes)
            self.loss = _build_loss(loss_type, ignore_value)

    @staticmethod
    def _projection(in_channels, out_channels, norm, bias):
        conv = Conv2d(in_channels, out_channels, kernel_size=1, bias=bias,
                      norm=get_norm(norm, out_channels), activation=F.relu)
        c2_xavier_fill(conv)
        return conv

    def _fusion(self, in_channels, out_channels, norm, bias):
        if self.use_depthwise_separable_conv:  # one 5x5: the receptive field of two 3x3
            return DepthwiseSeparableConv2d(in_channels, out_channels, kernel_size=5,
                                            padding=2, norm1=norm, activation1=F.relu,
                                            norm2=norm, activation2=F.relu)
        convs = [Conv2d(cin, out_channels, kernel_size=3, padding=1, bias=bias,
                        norm=get_norm(norm, out_channels), activation=F.relu)
                 for cin in (in_channels, out_channels)]
        for conv in convs:
            c2_xavier_fill(conv)
        return nn.Sequential(*convs)

    @classmethod
    def from_config(cls, cfg, input_shape):
        head = cfg.MODEL.SEM_SEG_HEAD
        decoder_channels = [head.CONVS_DIM] * (len(head.IN_FEATURES) - 1) + [head.ASPP_CHANNELS]
        return dict(
            input_shape={k: v for k, v in input_shape.items() if k in head.IN_FEATURES},
            project_channels=head.PROJECT_CHANNELS, aspp_dilations=head.ASPP_DILATIONS,
            aspp_dropout=head.ASPP_DROPOUT, decoder_channels=decoder_channels,
            common_stride=head.COMMON_STRIDE, norm=head.NORM, train_size=_crop_size(cfg),
            loss_weight=head.LOSS_WEIGHT, loss_type=head.LOSS_TYPE,
            ignore_value=head.IGNORE_VALUE, num_classes=head.NUM_CLASSES,
            use_depthwise_separable_conv=head.USE_DEPTHWISE_SEPARABLE_CONV)

    def forward(self, features, targets=None):
        """Decoder only: the decoder's features. Training: (None, {"loss_sem_seg"}); inference:
        (logits upsampled by common_stride, {})."""
        y = self.layers(features)
        if self.decoder_only:
            return y
        if self.training:
            return None, self.losses(y, targets)
        return _upsample(y, self.common_stride), {}

    def layers(self, features):
        """Decoder from the coarsest feature to the finest, then the predictor if any."""
        y = None
        for name in self.in_features[::-1]:
            stage = self.decoder[name]
            projected = stage["project_conv"](features[name])
            if stage["fuse_conv"] is None:
                y = projected
                continue
            y = F.interpolate(y, size=projected.shape[2:], mode="bilinear", align_corners=False)
            y = stage["fuse_conv"](torch.cat([projected, y], dim=1))
        if not self.decoder_only:
            y = self.predictor(y)
        return y

    def losses(self, predictions, targets):
        loss = self.loss(_upsample(predictions, self.common_stride), targets)
        return {"loss_sem_seg": loss * self.loss_weight}


@SEM_SEG_HEADS_REGISTRY.register()
class DeepLabV3Head(nn.Module):
    """DeepLabV3: ASPP on the one feature of MODEL.SEM_SEG_HEAD.IN_FEATURES, then a 1x1
    predictor to NUM_CLASSES logits, upsampled by COMMON_STRIDE (the feature's stride)."""

    def __init__(self, cfg, input_shape: Dict[str, ShapeSpec]):
        super().__init__()
        head = cfg.MODEL.SEM_SEG_HEAD
        self.in_features = head.IN_FEATURES
        in_channels = [input_shape[f].channels for f in self.in_features]
        self.ignore_value = head.IGNORE_VALUE
        self.common_stride = head.COMMON_STRIDE
        self.loss_weight = head.LOSS_WEIGHT
        self.loss_type = head.LOSS_TYPE
        assert len(self.in_features) == 1, \
            f"DeepLabV3Head takes one feature, got IN_FEATURES {self.in_features}"
        assert len(in_channels) == 1
        self.aspp = ASPP(in_channels[0], head.ASPP_CHANNELS, head.ASPP_DILATIONS, norm=head.NORM,
                         activation=F.relu,
                         pool_kernel_size=_pool_kernel_size(_crop_size(cfg), self.common_stride),
                         dropout=head.ASPP_DROPOUT,
                         use_depthwise_separable_conv=head.USE_DEPTHWISE_SEPARABLE_CONV)
        self.predictor = _new_predictor(head.CONVS_DIM, head.NUM_CLASSES)
        self.loss = _build_loss(self.loss_type, self.ignore_value)

    def forward(self, features, targets=None):
        """Training: (None, {"loss_sem_seg"}); inference: (upsampled logits, {})."""
        x = self.predictor(self.aspp(features[self.in_features[0]]))
        if self.training:
            return None, self.losses(x, targets)
        return _upsample(x, self.common_stride), {}

    def losses(self, predictions, targets):
        loss = self.loss(_upsample(predictions, self.common_stride), targets)
        return {"loss_sem_seg": loss * self.loss_weight}
