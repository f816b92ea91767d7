"""PointRend's point heads (POINT_HEAD_REGISTRY): per-point MLPs as kernel-1 Conv1d layers on
fine-grained features and the coarse prediction (StandardPointHead), or with per-instance
predicted weights (ImplicitPointHead); and the point loss."""
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ...layers import ShapeSpec, c2_msra_fill, cat
from ...utils.events import get_event_storage
from ...utils.registry import Registry

POINT_HEAD_REGISTRY = Registry("POINT_HEAD")
POINT_HEAD_REGISTRY.__doc__ = """Point heads: predictions from per-point features, built as
obj(cfg, input_shape)."""


def roi_mask_point_loss(mask_logits, instances, point_labels):
    """Mean binary cross-entropy of the point logits mask_logits (R, C or 1, P) of each
    instance's gt class (the single mask, class-agnostic) against point_labels (R, P); labels
    -1 are ignored (weight 0, still counted in the mean). Puts "point/accuracy" in the
    EventStorage. 0 (keeping the graph) without instances."""
    with torch.no_grad():
        class_agnostic = mask_logits.size(1) == 1
        num_masks = mask_logits.size(0)
        gt_classes = []
        for instances_per_image in instances:
            if len(instances_per_image) == 0:
                continue
            if not class_agnostic:
                gt_classes.append(instances_per_image.gt_classes.to(dtype=torch.int64))

    ignored = point_labels == -1
    if point_labels.shape[0] == 0:
        return mask_logits.sum() * 0
    assert point_labels.numel() > 0, point_labels.shape

    if class_agnostic:
        mask_logits = mask_logits[:, 0]
    else:
        mask_logits = mask_logits[torch.arange(num_masks), cat(gt_classes, dim=0)]

    correct = ((mask_logits > 0.0) == point_labels.to(dtype=torch.uint8))[~ignored]
    accuracy = correct.nonzero().size(0) / max(correct.numel(), 1.0)
    get_event_storage().put_scalar("point/accuracy", accuracy)

    return F.binary_cross_entropy_with_logits(
        mask_logits, point_labels.to(dtype=torch.float32), weight=~ignored, reduction="mean")


@POINT_HEAD_REGISTRY.register()
class StandardPointHead(nn.Module):
    """NUM_FC ReLU layers of FC_DIM channels then a predictor (NUM_CLASSES masks, 1
    class-agnostic), all kernel-1 Conv1d; the input is the fine-grained features and the coarse
    prediction, the coarse prediction appended to every layer's input with
    COARSE_PRED_EACH_LAYER."""

    def __init__(self, cfg, input_shape: ShapeSpec):
        super().__init__()
        head = cfg.MODEL.POINT_HEAD
        num_classes = head.NUM_CLASSES
        fc_dim = head.FC_DIM
        self.coarse_pred_each_layer = head.COARSE_PRED_EACH_LAYER

        channels = input_shape.channels + num_classes
        self.fc_layers = []
        for k in range(head.NUM_FC):
            fc = nn.Conv1d(channels, fc_dim, kernel_size=1, stride=1, padding=0, bias=True)
            self.add_module(f"fc{k + 1}", fc)
            self.fc_layers.append(fc)
            channels = fc_dim + (num_classes if self.coarse_pred_each_layer else 0)

        num_masks = 1 if head.CLS_AGNOSTIC_MASK else num_classes
        self.predictor = nn.Conv1d(channels, num_masks, kernel_size=1, stride=1, padding=0)

        for layer in self.fc_layers:
            c2_msra_fill(layer)
        nn.init.normal_(self.predictor.weight, std=0.001)
        if self.predictor.bias is not None:
            nn.init.constant_(self.predictor.bias, 0)

    def forward(self, fine_grained_features, coarse_features):
        """(R, C_fine, P), (R, NUM_CLASSES, P) -> point logits (R, masks, P)."""
        x = torch.cat((fine_grained_features, coarse_features), dim=1)
        for layer in self.fc_layers:
            x = F.relu(layer(x))
            if self.coarse_pred_each_layer:
                x = cat((x, coarse_features), dim=1)
        return self.predictor(x)


@POINT_HEAD_REGISTRY.register()
class ImplicitPointHead(nn.Module):
    """Implicit PointRend's point head: an MLP of NUM_FC + 1 layers (FC_DIM channels) whose
    weights and biases are given per instance (`parameters`, num_params each), on the
    fine-grained features and/or a 256-channel random Fourier encoding of the point."""

    def __init__(self, cfg, input_shape: ShapeSpec):
        super().__init__()
        head = cfg.MODEL.POINT_HEAD
        implicit = cfg.MODEL.IMPLICIT_POINTREND
        self.num_layers = head.NUM_FC + 1
        self.channels = head.FC_DIM
        self.image_feature_enabled = implicit.IMAGE_FEATURE_ENABLED
        self.positional_encoding_enabled = implicit.POS_ENC_ENABLED
        self.num_classes = 1 if head.CLS_AGNOSTIC_MASK else head.NUM_CLASSES
        self.in_channels = input_shape.channels if self.image_feature_enabled else 0
        if self.positional_encoding_enabled:
            self.in_channels += 256
            self.register_buffer("positional_encoding_gaussian_matrix", torch.randn((2, 128)))
        assert self.in_channels > 0
        assert self.num_layers >= 2

        layer_inputs = [self.in_channels] + [self.channels] * (self.num_layers - 1)
        layer_outputs = [self.channels] * (self.num_layers - 1) + [self.num_classes]
        self.num_weight_params = [i * o for i, o in zip(layer_inputs, layer_outputs)]
        self.num_bias_params = list(layer_outputs)
        self.num_params = sum(self.num_weight_params) + sum(self.num_bias_params)

    def forward(self, fine_grained_features, point_coords, parameters):
        """fine_grained_features (R, C, P), point_coords (R, P, 2) in [0, 1], parameters
        (R, num_params) -> point logits (R, classes, P)."""
        num_instances = fine_grained_features.size(0)
        num_points = fine_grained_features.size(2)
        if num_instances == 0:
            return torch.zeros((0, 1, num_points), device=fine_grained_features.device)

        if self.positional_encoding_enabled:
            centred = 2 * point_coords.reshape(num_instances * num_points, 2) - 1
            projected = centred @ self.positional_encoding_gaussian_matrix.to(centred.device)
            projected = 2 * np.pi * projected
            encoding = torch.cat([torch.sin(projected), torch.cos(projected)], dim=1)
            encoding = encoding.reshape(num_instances, num_points, 256).permute(0, 2, 1)
            if self.image_feature_enabled:
                fine_grained_features = torch.cat([encoding, fine_grained_features], dim=1)
            else:
                fine_grained_features = encoding

        features = fine_grained_features.reshape(num_instances, self.in_channels, num_points)
        weights, biases = self._parse_params(parameters, self.in_channels, self.channels,
                                             self.num_classes, self.num_weight_params,
                                             self.num_bias_params)
        logits = self._dynamic_mlp(features, weights, biases, num_instances)
        return logits.reshape(-1, self.num_classes, num_points)

    @staticmethod
    def _dynamic_mlp(features, weights, biases, num_instances):
        """Each instance's MLP (weights (R, out, in), biases (R, out, 1)) on its features
        (R, in, P); ReLU between the layers."""
        assert features.dim() == 3, features.dim()
        x = features
        for index, (weight, bias) in enumerate(zip(weights, biases)):
            x = torch.einsum("nck,ndc->ndk", x, weight) + bias
            if index < len(weights) - 1:
                x = F.relu(x)
        return x

    @staticmethod
    def _parse_params(pred_params, in_channels, channels, num_classes, num_weight_params,
                      num_bias_params):
        """pred_params (R, num_params), all layers' weights then all biases, as per-layer
        weights (R, out, in) and biases (R, out, 1)."""
        assert pred_params.dim() == 2
        assert len(num_weight_params) == len(num_bias_params)
        assert pred_params.size(1) == sum(num_weight_params) + sum(num_bias_params)
        num_instances = pred_params.size(0)
        num_layers = len(num_weight_params)
        splits = list(torch.split_with_sizes(pred_params, num_weight_params + num_bias_params,
                                             dim=1))
        weights, biases = splits[:num_layers], splits[num_layers:]
        for layer in range(num_layers):
            fan_in = in_channels if layer == 0 else channels
            fan_out = num_classes if layer == num_layers - 1 else channels
            weights[layer] = weights[layer].reshape(num_instances, fan_out, fan_in)
            biases[layer] = biases[layer].reshape(num_instances, fan_out, 1)
        return weights, biases


def build_point_head(cfg, input_channels):
    """The point head named by cfg.MODEL.POINT_HEAD.NAME, on input_channels (a ShapeSpec)."""
    return POINT_HEAD_REGISTRY.get(cfg.MODEL.POINT_HEAD.NAME)(cfg, input_channels)


def build_point_head_over_features(cfg, input_shape, owner, num_classes_key):
    """The point head over the channels of MODEL.POINT_HEAD.IN_FEATURES together, for the head
    `owner` whose classes are cfg's `num_classes_key` (e.g. "ROI_HEADS"): a ValueError naming both
    keys when MODEL.POINT_HEAD.NUM_CLASSES differs from its NUM_CLASSES."""
    point = cfg.MODEL.POINT_HEAD
    num_classes = getattr(cfg.MODEL, num_classes_key).NUM_CLASSES
    if num_classes != point.NUM_CLASSES:
        raise ValueError(f"{owner}: MODEL.POINT_HEAD.NUM_CLASSES ({point.NUM_CLASSES}) must equal "
                         f"MODEL.{num_classes_key}.NUM_CLASSES ({num_classes})")
    in_channels = int(np.sum([input_shape[f].channels for f in point.IN_FEATURES]))
    return build_point_head(cfg, ShapeSpec(channels=in_channels, width=1, height=1))
