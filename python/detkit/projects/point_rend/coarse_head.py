"""PointRend's coarse mask head (ConvFCHead): pooled region features through a channel-reducing
1x1 conv, a stride-2 2x2 conv and FC layers to a low-resolution mask per class."""
import logging
from typing import List, Tuple

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ...config import configurable
from ...layers import Conv2d, ShapeSpec, c2_msra_fill, c2_xavier_fill


class ConvFCHead(nn.Module):
    """Region features (R, C, H, W) -> (R, *output_shape): a 1x1 conv to conv_dim channels (when
    C > conv_dim), a 2x2 stride-2 conv, ReLU FC layers of fc_dims, a linear prediction."""

    _version = 2

    @configurable
    def __init__(self, input_shape: ShapeSpec, *, conv_dim: int, fc_dims: List[int],
                 output_shape: Tuple[int]):
        """conv_dim: the convolutions' output channels; fc_dims: the FC layers' widths
        (non-empty); output_shape: the prediction's shape per region."""
        super().__init__()
        self.output_shape = output_shape

        self.conv_layers = []
        if input_shape.channels > conv_dim:
            self.reduce_channel_dim_conv = Conv2d(
                input_shape.channels, conv_dim, kernel_size=1, stride=1, padding=0, bias=True,
                activation=F.relu)
            self.conv_layers.append(self.reduce_channel_dim_conv)
        self.reduce_spatial_dim_conv = Conv2d(conv_dim, conv_dim, kernel_size=2, stride=2,
                                              padding=0, bias=True, activation=F.relu)
        self.conv_layers.append(self.reduce_spatial_dim_conv)

        width = conv_dim * input_shape.height * input_shape.width // 4
        self.fcs = []
        for k, fc_dim in enumerate(fc_dims):
            fc = nn.Linear(width, fc_dim)
            self.add_module(f"fc{k + 1}", fc)
            self.fcs.append(fc)
            width = fc_dim

        self.prediction = nn.Linear(fc_dims[-1], int(np.prod(self.output_shape)))
        nn.init.normal_(self.prediction.weight, std=0.001)
        nn.init.constant_(self.prediction.bias, 0)
        for layer in self.conv_layers:
            c2_msra_fill(layer)
        for layer in self.fcs:
            c2_xavier_fill(layer)

    @classmethod
    def from_config(cls, cfg, input_shape):
        head = cfg.MODEL.ROI_MASK_HEAD
        side = head.OUTPUT_SIDE_RESOLUTION
        return {"input_shape": input_shape, "conv_dim": head.CONV_DIM,
                "fc_dims": [head.FC_DIM] * head.NUM_FC,
                "output_shape": (cfg.MODEL.ROI_HEADS.NUM_CLASSES, side, side)}

    def forward(self, x):
        num_regions = x.shape[0]
        for layer in self.conv_layers:
            x = layer(x)
        x = torch.flatten(x, start_dim=1)
        for layer in self.fcs:
            x = F.relu(layer(x))
        return self.prediction(x).view(*([num_regions] + list(self.output_shape)))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Checkpoints before version 2 named the FC layers coarse_mask_fc*: renamed fc*."""
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            logging.getLogger(__name__).warning(
                "PointRend's coarse mask head weights are in the old format: converting them")
            old = prefix + "coarse_mask_fc"
            for key in list(state_dict.keys()):
                if key.startswith(old):
                    state_dict[prefix + "fc" + key[len(old):]] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
