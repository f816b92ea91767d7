"""Detectron2's keypoint heads (detectron2.modeling.roi_heads.keypoint_head):
ROI_KEYPOINT_HEAD_REGISTRY, the Keypoint R-CNN loss (a softmax over each keypoint's heatmap
cells, against the cell of its ground-truth location) and inference (heatmaps to (x, y, score)
in the image), and KRCNNConvDeconvUpsampleHead. Scriptable and traceable for inference."""
from typing import List

import torch
from torch import nn
from torch.nn import functional as F

from ...config import configurable
from ...layers import Conv2d, ConvTranspose2d, cat, interpolate
from ...structures import Instances, heatmaps_to_keypoints
from ...utils.events import get_event_storage
from ...utils.registry import Registry

__all__ = ["ROI_KEYPOINT_HEAD_REGISTRY", "build_keypoint_head", "BaseKeypointRCNNHead",
           "KRCNNConvDeconvUpsampleHead", "keypoint_rcnn_inference", "keypoint_rcnn_loss"]

# batches whose loss was 0 for want of a visible keypoint, since the process started
_TOTAL_SKIPPED = 0

ROI_KEYPOINT_HEAD_REGISTRY = Registry("ROI_KEYPOINT_HEAD")
ROI_KEYPOINT_HEAD_REGISTRY.__doc__ = """Keypoint heads: keypoint heatmaps from per-region
features, built as obj(cfg, input_shape)."""


def build_keypoint_head(cfg, input_shape):
    """The keypoint head named by cfg.MODEL.ROI_KEYPOINT_HEAD.NAME."""
    return ROI_KEYPOINT_HEAD_REGISTRY.get(cfg.MODEL.ROI_KEYPOINT_HEAD.NAME)(cfg, input_shape)


def keypoint_rcnn_loss(pred_keypoint_logits, instances, normalizer):
    """pred_keypoint_logits (N, K, S, S) for the N proposals of `instances` (fields
    proposal_boxes, gt_keypoints): the summed cross-entropy of each visible in-box keypoint's
    S * S logits against its cell (Keypoints.to_heatmap), divided by `normalizer` (None: by the
    number of those keypoints). 0 (keeping the graph) when there is none."""
    targets = []
    valid = []
    side = pred_keypoint_logits.shape[2]
    for instances_per_image in instances:
        if len(instances_per_image) == 0:
            continue
        cells, visible = instances_per_image.gt_keypoints.to_heatmap(
            instances_per_image.proposal_boxes.tensor, side)
        targets.append(cells.reshape(-1))
        valid.append(visible.reshape(-1))

    if len(targets):
        keypoint_targets = cat(targets, dim=0)
        valid = torch.nonzero(cat(valid, dim=0).to(dtype=torch.uint8)).squeeze(1)

    if len(targets) == 0 or valid.numel() == 0:
        global _TOTAL_SKIPPED
        _TOTAL_SKIPPED += 1
        get_event_storage().put_scalar("kpts_num_skipped_batches", _TOTAL_SKIPPED,
                                       smoothing_hint=False)
        return pred_keypoint_logits.sum() * 0

    n, k, h, w = pred_keypoint_logits.shape
    flat_logits = pred_keypoint_logits.view(n * k, h * w)
    loss = F.cross_entropy(flat_logits[valid], keypoint_targets[valid].long(), reduction="sum")
    if normalizer is None:
        normalizer = valid.numel()
    return loss / normalizer


def keypoint_rcnn_inference(pred_keypoint_logits: torch.Tensor,
                            pred_instances: List[Instances]):
    """Sets on each image's Instances pred_keypoints (Ri, K, 3): x, y in the image and the
    score (heatmaps_to_keypoints over pred_boxes), and pred_keypoint_heatmaps (Ri, K, S, S),
    the logits."""
    boxes = cat([i.pred_boxes.tensor for i in pred_instances], dim=0)
    pred_keypoint_logits = pred_keypoint_logits.detach()
    decoded = heatmaps_to_keypoints(pred_keypoint_logits, boxes.detach())
    per_image = [len(i) for i in pred_instances]
    keypoints = decoded[:, :, [0, 1, 3]].split(per_image, dim=0)
    heatmaps = pred_keypoint_logits.split(per_image, dim=0)
    for keypoints_i, heatmaps_i, instances in zip(keypoints, heatmaps, pred_instances):
        instances.pred_keypoints = keypoints_i
        instances.pred_keypoint_heatmaps = heatmaps_i


class BaseKeypointRCNNHead(nn.Module):
    """A keypoint head's loss (training) and inference around its `layers`."""

    @configurable
    def __init__(self, *, num_keypoints, loss_weight=1.0, loss_normalizer=1.0):
        """num_keypoints: K; loss_weight: the loss's factor; loss_normalizer: a float (the loss
        is divided by it times the number of images) or "visible" (by the number of visible
        keypoints)."""
        super().__init__()
        self.num_keypoints = num_keypoints
        self.loss_weight = loss_weight
        if not (loss_normalizer == "visible" or isinstance(loss_normalizer, float)):
            raise ValueError(f"BaseKeypointRCNNHead: loss_normalizer must be a float or "
                             f"'visible', got {loss_normalizer!r}")
        self.loss_normalizer = loss_normalizer

    @classmethod
    def from_config(cls, cfg, input_shape):
        head = cfg.MODEL.ROI_KEYPOINT_HEAD
        ret = {"loss_weight": head.LOSS_WEIGHT, "num_keypoints": head.NUM_KEYPOINTS}
        if head.NORMALIZE_LOSS_BY_VISIBLE_KEYPOINTS:
            ret["loss_normalizer"] = "visible"
        else:
            # the expected number of foreground keypoints per image
            ret["loss_normalizer"] = (ret["num_keypoints"] *
                                      cfg.MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE *
                                      cfg.MODEL.ROI_HEADS.POSITIVE_FRACTION)
        return ret

    def forward(self, x, instances: List[Instances]):
        """Training: {"loss_keypoint"}; inference: `instances` with pred_keypoints and
        pred_keypoint_heatmaps set."""
        x = self.layers(x)
        if self.training:
            num_images = len(instances)
            normalizer = (None if self.loss_normalizer == "visible"
                          else num_images * self.loss_normalizer)
            return {"loss_keypoint": keypoint_rcnn_loss(x, instances, normalizer=normalizer)
                    * self.loss_weight}
        keypoint_rcnn_inference(x, instances)
        return instances

    def layers(self, x):
        """The keypoint heatmap logits from the region features."""
        raise NotImplementedError(f"{type(self).__name__} must define layers()")


# An nn.Sequential (scriptable): the layers are registered in the order layers() runs them.
@ROI_KEYPOINT_HEAD_REGISTRY.register()
class KRCNNConvDeconvUpsampleHead(BaseKeypointRCNNHead, nn.Sequential):
    """3x3 convolutions with ReLUs, a stride-2 transposed convolution to K heatmaps, then a
    bilinear upsampling by 2 (Mask R-CNN's keypoint head)."""

    @configurable
    def __init__(self, input_shape, *, num_keypoints, conv_dims, **kwargs):
        """conv_dims: the output channels of the convolutions. kwargs go to
        BaseKeypointRCNNHead."""
        super().__init__(num_keypoints=num_keypoints, **kwargs)
        channels = input_shape.channels
        for index, conv_dim in enumerate(conv_dims, 1):
            self.add_module(f"conv_fcn{index}", Conv2d(channels, conv_dim, 3, stride=1,
                                                       padding=1))
            self.add_module(f"conv_fcn_relu{index}", nn.ReLU())
            channels = conv_dim

        kernel = 4
        self.score_lowres = ConvTranspose2d(channels, num_keypoints, kernel, stride=2,
                                            padding=kernel // 2 - 1)
        self.up_scale = 2.0

        for name, param in self.named_parameters():
            if "bias" in name:
                nn.init.constant_(param, 0)
            elif "weight" in name:
                # Caffe2's MSRAFill: He normal over the fan-out
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")

    @classmethod
    def from_config(cls, cfg, input_shape):
        ret = super().from_config(cfg, input_shape)
        ret["input_shape"] = input_shape
        ret["conv_dims"] = cfg.MODEL.ROI_KEYPOINT_HEAD.CONV_DIMS
        return ret

    def layers(self, x):
        for layer in self:
            x = layer(x)
        return interpolate(x, scale_factor=self.up_scale, mode="bilinear", align_corners=False)
