"""Detectron2's mask heads (detectron2.modeling.roi_heads.mask_head): ROI_MASK_HEAD_REGISTRY,
the Mask R-CNN loss (per-pixel BCE against the ground-truth masks cropped to each proposal) and
inference (each box's mask of its predicted class as probabilities), and
MaskRCNNConvUpsampleHead. Scriptable for inference."""
from typing import List

import torch
from torch import nn
from torch.nn import functional as F

from ...config import configurable
from ...layers import Conv2d, ConvTranspose2d, ShapeSpec, c2_msra_fill, cat, get_norm
from ...layers.wrappers import move_device_like
from ...structures import Instances
from ...utils.events import get_event_storage
from ...utils.registry import Registry

__all__ = ["BaseMaskRCNNHead", "MaskRCNNConvUpsampleHead", "build_mask_head",
           "mask_rcnn_inference", "mask_rcnn_loss", "ROI_MASK_HEAD_REGISTRY"]

ROI_MASK_HEAD_REGISTRY = Registry("ROI_MASK_HEAD")
ROI_MASK_HEAD_REGISTRY.__doc__ = """Mask heads: instance masks from per-region features, built as
obj(cfg, input_shape)."""


def _log_mask_stats(mask_logits, gt_masks_bool, gt_masks, vis_period):
    """Accuracy, false positive and false negative rates at logit 0 into the current
    EventStorage; every vis_period iterations the predicted and ground-truth masks as images."""
    incorrect = (mask_logits > 0.0) != gt_masks_bool
    accuracy = 1 - (incorrect.sum().item() / max(incorrect.numel(), 1.0))
    num_positive = gt_masks_bool.sum().item()
    false_positive = (incorrect & ~gt_masks_bool).sum().item() / max(
        gt_masks_bool.numel() - num_positive, 1.0)
    false_negative = (incorrect & gt_masks_bool).sum().item() / max(num_positive, 1.0)

    storage = get_event_storage()
    storage.put_scalar("mask_rcnn/accuracy", accuracy)
    storage.put_scalar("mask_rcnn/false_positive", false_positive)
    storage.put_scalar("mask_rcnn/false_negative", false_negative)
    if vis_period > 0 and storage.iter % vis_period == 0:
        side_by_side = torch.cat([mask_logits.sigmoid(), gt_masks], dim=2)
        name = "Left: mask prediction;   Right: mask GT"
        for index, mask in enumerate(side_by_side):
            storage.put_image(name + f" ({index})", torch.stack([mask] * 3, dim=0))


@torch.jit.unused
def mask_rcnn_loss(pred_mask_logits: torch.Tensor, instances: List[Instances],
                   vis_period: int = 0):
    """Mask R-CNN's mask loss: pred_mask_logits (B, C, M, M) (C = 1: class-agnostic) for the B
    foreground proposals of `instances` (fields proposal_boxes, gt_masks and, class-specific,
    gt_classes); the mean binary cross-entropy of each proposal's logits for its gt class
    against its gt mask cropped to the proposal box on an M x M grid. 0 (keeping the graph)
    without proposals."""
    class_agnostic = pred_mask_logits.size(1) == 1
    num_masks = pred_mask_logits.size(0)
    side = pred_mask_logits.size(2)
    if pred_mask_logits.size(2) != pred_mask_logits.size(3):
        raise ValueError("mask_rcnn_loss: mask predictions must be square, got "
                         f"{tuple(pred_mask_logits.shape)}")

    gt_classes = []
    gt_masks = []
    for instances_per_image in instances:
        if len(instances_per_image) == 0:
            continue
        if not class_agnostic:
            gt_classes.append(instances_per_image.gt_classes.to(dtype=torch.int64))
        cropped = instances_per_image.gt_masks.crop_and_resize(
            instances_per_image.proposal_boxes.tensor, side)
        gt_masks.append(cropped.to(device=pred_mask_logits.device))

    if len(gt_masks) == 0:
        return pred_mask_logits.sum() * 0

    gt_masks = cat(gt_masks, dim=0)
    if class_agnostic:
        pred_mask_logits = pred_mask_logits[:, 0]
    else:
        pred_mask_logits = pred_mask_logits[torch.arange(num_masks), cat(gt_classes, dim=0)]

    # crop_and_resize gives bool masks; a float rasterisation is read at 0.5
    gt_masks_bool = gt_masks if gt_masks.dtype == torch.bool else gt_masks > 0.5
    gt_masks = gt_masks.to(dtype=torch.float32)
    _log_mask_stats(pred_mask_logits, gt_masks_bool, gt_masks, vis_period)
    return F.binary_cross_entropy_with_logits(pred_mask_logits, gt_masks, reduction="mean")


def mask_rcnn_inference(pred_mask_logits: torch.Tensor, pred_instances: List[Instances]):
    """Sets pred_masks (Ri, 1, M, M) probabilities on each image's Instances: the sigmoid of
    the mask of each box's pred_classes (of the single mask, class-agnostic)."""
    if pred_mask_logits.size(1) == 1:
        mask_probs = pred_mask_logits.sigmoid()
    else:
        num_masks = pred_mask_logits.shape[0]
        classes = cat([i.pred_classes for i in pred_instances])
        # traced: the index tensor made on CPU and moved, so the trace keeps the move
        if torch.jit.is_scripting():
            device = classes.device
        else:
            device = torch.device("cpu") if torch.jit.is_tracing() else classes.device
        rows = move_device_like(torch.arange(num_masks, device=device), classes)
        mask_probs = pred_mask_logits[rows, classes][:, None].sigmoid()

    per_image = mask_probs.split([len(i) for i in pred_instances], dim=0)
    for probs, instances in zip(per_image, pred_instances):
        instances.pred_masks = probs


class BaseMaskRCNNHead(nn.Module):
    """A mask head's loss (training) and inference around its `layers`."""

    @configurable
    def __init__(self, *, loss_weight: float = 1.0, vis_period: int = 0):
        """loss_weight: the mask loss's factor; vis_period: how often (iterations) the masks
        are put in the EventStorage as images (0: never)."""
        super().__init__()
        self.vis_period = vis_period
        self.loss_weight = loss_weight

    @classmethod
    def from_config(cls, cfg, input_shape):
        return {"vis_period": cfg.VIS_PERIOD}

    def forward(self, x, instances: List[Instances]):
        """Training: {"loss_mask"}; inference: `instances` with pred_masks set."""
        x = self.layers(x)
        if self.training:
            return {"loss_mask": mask_rcnn_loss(x, instances, self.vis_period) * self.loss_weight}
        mask_rcnn_inference(x, instances)
        return instances

    def layers(self, x):
        """The mask logits from the region features."""
        raise NotImplementedError(f"{type(self).__name__} must define layers()")


# An nn.Sequential (scriptable): the layers are registered in the order layers() runs them.
@ROI_MASK_HEAD_REGISTRY.register()
class MaskRCNNConvUpsampleHead(BaseMaskRCNNHead, nn.Sequential):
    """3x3 convolutions (each with its norm and a ReLU), a stride-2 transposed convolution and
    ReLU, then a 1x1 convolution giving one mask per class."""

    @configurable
    def __init__(self, input_shape: ShapeSpec, *, num_classes, conv_dims, conv_norm="",
                 **kwargs):
        """num_classes: masks predicted (1: class-agnostic); conv_dims: the output channels of
        the convolutions, the last one the transposed convolution's (non-empty); conv_norm: a
        get_norm name or callable for the convolutions. kwargs go to BaseMaskRCNNHead."""
        super().__init__(**kwargs)
        if len(conv_dims) < 1:
            raise ValueError("MaskRCNNConvUpsampleHead: conv_dims have to be non-empty!")

        self.conv_norm_relus = []
        channels = input_shape.channels
        for k, conv_dim in enumerate(conv_dims[:-1]):
            conv = Conv2d(channels, conv_dim, kernel_size=3, stride=1, padding=1,
                          bias=not conv_norm, norm=get_norm(conv_norm, conv_dim),
                          activation=nn.ReLU())
            self.add_module(f"mask_fcn{k + 1}", conv)
            self.conv_norm_relus.append(conv)
            channels = conv_dim

        self.deconv = ConvTranspose2d(channels, conv_dims[-1], kernel_size=2, stride=2,
                                      padding=0)
        self.add_module("deconv_relu", nn.ReLU())
        channels = conv_dims[-1]
        self.predictor = Conv2d(channels, num_classes, kernel_size=1, stride=1, padding=0)

        for layer in self.conv_norm_relus + [self.deconv]:
            c2_msra_fill(layer)
        nn.init.normal_(self.predictor.weight, std=0.001)
        if self.predictor.bias is not None:
            nn.init.constant_(self.predictor.bias, 0)

    @classmethod
    def from_config(cls, cfg, input_shape):
        ret = super().from_config(cfg, input_shape)
        head = cfg.MODEL.ROI_MASK_HEAD
        ret.update(conv_dims=[head.CONV_DIM] * (head.NUM_CONV + 1),  # + the transposed conv
                   conv_norm=head.NORM, input_shape=input_shape)
        ret["num_classes"] = 1 if head.CLS_AGNOSTIC_MASK else cfg.MODEL.ROI_HEADS.NUM_CLASSES
        return ret

    def layers(self, x):
        for layer in self:
            x = layer(x)
        return x


def build_mask_head(cfg, input_shape):
    """The mask head named by cfg.MODEL.ROI_MASK_HEAD.NAME."""
    return ROI_MASK_HEAD_REGISTRY.get(cfg.MODEL.ROI_MASK_HEAD.NAME)(cfg, input_shape)
