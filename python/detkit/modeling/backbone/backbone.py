"""Backbone: the base class of Detectron2's feature extractors (detectron2.modeling.backbone):
an nn.Module whose forward gives named feature maps, with their channels and strides."""
from abc import ABCMeta, abstractmethod
from typing import Dict

from torch import nn

from ...layers import ShapeSpec

__all__ = ["Backbone"]


class Backbone(nn.Module, metaclass=ABCMeta):
    """Subclasses fill `_out_features` (names), `_out_feature_channels` and
    `_out_feature_strides` (dicts by name) and return {name: tensor} from forward."""

    def __init__(self):
        super().__init__()

    @abstractmethod
    def forward(self):
        """{feature name: (N, C, H, W) tensor}."""

    @property
    def size_divisibility(self) -> int:
        """The multiple the input's height and width must be (0: none)."""
        return 0

    @property
    def padding_constraints(self) -> Dict[str, int]:
        """How inputs must be padded: "size_divisibility" and / or "square_size" (a side > 0
        pads every image to that square); empty when there is no constraint."""
        return {}

    def output_shape(self):
        """{feature name: ShapeSpec(channels, stride)} for each output feature."""
        return {name: ShapeSpec(channels=self._out_feature_channels[name],
                                stride=self._out_feature_strides[name])
                for name in self._out_features}
