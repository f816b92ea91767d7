"""Detectron2's ROI heads (detectron2.modeling.roi_heads.roi_heads): ROI_HEADS_REGISTRY; ROIHeads,
the matching of proposals to ground truth and the sampling of the regions a head trains on;
StandardROIHeads (box, mask and keypoint heads, each with its own pooler; scriptable for
inference) and Res5ROIHeads (the C4 models' res5 stage shared by the box and mask heads)."""
import inspect
import logging
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import nn

from ...config import configurable
from ...layers import ShapeSpec, nonzero_tuple
from ...structures import Boxes, ImageList, Instances, pairwise_iou
from ...utils.events import get_event_storage
from ...utils.registry import Registry
from ..matcher import Matcher
from ..poolers import ROIPooler
from ..sampling import subsample_labels
from .box_head import build_box_head
from .fast_rcnn import FastRCNNOutputLayers
from .keypoint_head import build_keypoint_head
from .mask_head import build_mask_head

__all__ = ["ROI_HEADS_REGISTRY", "ROIHeads", "Res5ROIHeads", "StandardROIHeads",
           "build_roi_heads", "select_foreground_proposals",
           "select_proposals_with_visible_keypoints"]

ROI_HEADS_REGISTRY = Registry("ROI_HEADS")
ROI_HEADS_REGISTRY.__doc__ = """ROI heads: the per-region computation of an R-CNN on the feature
maps and the proposals, built as obj(cfg, input_shape); an ROIHeads."""

logger = logging.getLogger(__name__)


def build_roi_heads(cfg, input_shape):
    """The ROI heads named by cfg.MODEL.ROI_HEADS.NAME."""
    return ROI_HEADS_REGISTRY.get(cfg.MODEL.ROI_HEADS.NAME)(cfg, input_shape)


def select_foreground_proposals(proposals: List[Instances], bg_label: int
                                ) -> Tuple[List[Instances], List[torch.Tensor]]:
    """Per image, the proposals whose gt_classes is neither -1 (ignored) nor bg_label, and the
    boolean mask that selected them."""
    if not isinstance(proposals, (list, tuple)):
        raise TypeError("select_foreground_proposals takes a list of Instances")
    if len(proposals) == 0 or not isinstance(proposals[0], Instances) or \
            not proposals[0].has("gt_classes"):
        raise ValueError("select_foreground_proposals: the proposals must be Instances with "
                         "gt_classes")
    foreground, masks = [], []
    for proposals_per_image in proposals:
        gt_classes = proposals_per_image.gt_classes
        mask = (gt_classes != -1) & (gt_classes != bg_label)
        foreground.append(proposals_per_image[mask.nonzero().squeeze(1)])
        masks.append(mask)
    return foreground, masks


def select_proposals_with_visible_keypoints(proposals: List[Instances]) -> List[Instances]:
    """Per image, the proposals with at least one visible ground-truth keypoint (visibility >=
    1) inside the proposal box (borders included); an image without proposals is kept as it
    is. The mean count per image goes to the EventStorage."""
    selected = []
    counts = []
    for proposals_per_image in proposals:
        if len(proposals_per_image) == 0:
            selected.append(proposals_per_image)
            continue
        keypoints = proposals_per_image.gt_keypoints.tensor  # (P, K, 3)
        visible = keypoints[:, :, 2] >= 1
        xs, ys = keypoints[:, :, 0], keypoints[:, :, 1]
        boxes = proposals_per_image.proposal_boxes.tensor.unsqueeze(dim=1)  # (P, 1, 4)
        inside = ((xs >= boxes[:, :, 0]) & (xs <= boxes[:, :, 2]) &
                  (ys >= boxes[:, :, 1]) & (ys <= boxes[:, :, 3]))
        keep = nonzero_tuple((inside & visible).any(dim=1))[0]
        counts.append(keep.numel())
        selected.append(proposals_per_image[keep])
    get_event_storage().put_scalar("keypoint_head/num_fg_samples", np.mean(counts))
    return selected


class ROIHeads(torch.nn.Module):
    """The per-region part of an R-CNN. This base matches proposals with the ground truth and
    samples the regions to train on (label_and_sample_proposals); subclasses define forward."""

    @configurable
    def __init__(self, *, num_classes, batch_size_per_image, positive_fraction, proposal_matcher,
                 proposal_append_gt=True):
        """num_classes: foreground classes; batch_size_per_image: regions sampled per image in
        training, at most positive_fraction of them foreground; proposal_matcher: a Matcher of
        proposals to ground truth; proposal_append_gt: the ground-truth boxes join the
        proposals."""
        super().__init__()
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction
        self.num_classes = num_classes
        self.proposal_matcher = proposal_matcher
        self.proposal_append_gt = proposal_append_gt

    @classmethod
    def from_config(cls, cfg):
        heads = cfg.MODEL.ROI_HEADS
        return {
            "batch_size_per_image": heads.BATCH_SIZE_PER_IMAGE,
            "positive_fraction": heads.POSITIVE_FRACTION,
            "num_classes": heads.NUM_CLASSES,
            "proposal_append_gt": heads.PROPOSAL_APPEND_GT,
            "proposal_matcher": Matcher(heads.IOU_THRESHOLDS, heads.IOU_LABELS,
                                        allow_low_quality_matches=False),
        }

    def _sample_proposals(self, matched_idxs: torch.Tensor, matched_labels: torch.Tensor,
                          gt_classes: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """From each proposal's matched ground truth and match label (1, 0 or -1): the indices
        of the sampled proposals and their classes (the matched class, num_classes for
        background)."""
        if gt_classes.numel() > 0:
            gt_classes = gt_classes[matched_idxs]
            gt_classes[matched_labels == 0] = self.num_classes
            gt_classes[matched_labels == -1] = -1
        else:
            gt_classes = torch.zeros_like(matched_idxs) + self.num_classes
        fg_idxs, bg_idxs = subsample_labels(gt_classes, self.batch_size_per_image,
                                            self.positive_fraction, self.num_classes)
        sampled = torch.cat([fg_idxs, bg_idxs], dim=0)
        return sampled, gt_classes[sampled]

    @torch.no_grad()
    def label_and_sample_proposals(self, proposals: List[Instances], targets: List[Instances]
                                   ) -> List[Instances]:
        """Per image, batch_size_per_image proposals (the ground-truth boxes among them with
        proposal_append_gt) sampled for training, with gt_classes and, when the image has
        ground truth, every other gt_* field of its matched ground truth (gt_boxes, gt_masks,
        ...). Counts of foreground and background samples go to the EventStorage."""
        if self.proposal_append_gt:
            # the RPN helper's (its proposals are weak early in training)
            from ..proposal_generator.proposal_utils import add_ground_truth_to_proposals
            proposals = add_ground_truth_to_proposals(targets, proposals)

        sampled_proposals = []
        num_fg_samples, num_bg_samples = [], []
        for proposals_per_image, targets_per_image in zip(proposals, targets):
            has_gt = len(targets_per_image) > 0
            quality = pairwise_iou(targets_per_image.gt_boxes, proposals_per_image.proposal_boxes)
            matched_idxs, matched_labels = self.proposal_matcher(quality)
            sampled_idxs, gt_classes = self._sample_proposals(matched_idxs, matched_labels,
                                                              targets_per_image.gt_classes)
            proposals_per_image = proposals_per_image[sampled_idxs]
            proposals_per_image.gt_classes = gt_classes
            if has_gt:
                matched = matched_idxs[sampled_idxs]
                for name, value in targets_per_image.get_fields().items():
                    if name.startswith("gt_") and not proposals_per_image.has(name):
                        proposals_per_image.set(name, value[matched])
            # without ground truth, only gt_classes (all background) is set
            num_bg_samples.append((gt_classes == self.num_classes).sum().item())
            num_fg_samples.append(gt_classes.numel() - num_bg_samples[-1])
            sampled_proposals.append(proposals_per_image)

        storage = get_event_storage()
        storage.put_scalar("roi_head/num_fg_samples", np.mean(num_fg_samples))
        storage.put_scalar("roi_head/num_bg_samples", np.mean(num_bg_samples))
        return sampled_proposals

    def forward(self, images: ImageList, features: Dict[str, torch.Tensor],
                proposals: List[Instances], targets: Optional[List[Instances]] = None
                ) -> Tuple[List[Instances], Dict[str, torch.Tensor]]:
        """images; features by name, (N, C, H, W) each; proposals per image (proposal_boxes,
        objectness_logits); targets per image in training (gt_boxes, gt_classes, gt_masks,
        gt_keypoints). Returns the detections per image (inference) and the losses
        (training)."""
        raise NotImplementedError(f"{type(self).__name__} must define forward()")


@ROI_HEADS_REGISTRY.register()
class Res5ROIHeads(ROIHeads):
    """The C4 models' heads: each region's pooled features go through a ResNet res5 stage that
    the box predictor (on its spatial mean) and the mask head share."""

    @configurable
    def __init__(self, *, in_features: List[str], pooler: ROIPooler, res5: nn.Module,
                 box_predictor: nn.Module, mask_head: Optional[nn.Module] = None, **kwargs):
        """in_features: the one feature map pooled; pooler; res5: the per-region network (a
        list of blocks becomes an nn.Sequential); box_predictor (FastRCNNOutputLayers'
        interface); mask_head: None without masks. kwargs go to ROIHeads."""
        super().__init__(**kwargs)
        self.in_features = in_features
        self.pooler = pooler
        if isinstance(res5, (list, tuple)):
            res5 = nn.Sequential(*res5)
        self.res5 = res5
        self.box_predictor = box_predictor
        self.mask_on = mask_head is not None
        if self.mask_on:
            self.mask_head = mask_head

    @classmethod
    def from_config(cls, cfg, input_shape):
        ret = super().from_config(cfg)
        in_features = ret["in_features"] = cfg.MODEL.ROI_HEADS.IN_FEATURES
        box_head = cfg.MODEL.ROI_BOX_HEAD
        resolution = box_head.POOLER_RESOLUTION
        if cfg.MODEL.KEYPOINT_ON:
            raise ValueError("Res5ROIHeads has no keypoint head (MODEL.KEYPOINT_ON must be "
                             "False)")
        if len(in_features) != 1:
            raise ValueError(f"Res5ROIHeads pools one feature map, got IN_FEATURES "
                             f"{list(in_features)}")
        ret["pooler"] = ROIPooler(output_size=resolution,
                                  scales=(1.0 / input_shape[in_features[0]].stride,),
                                  sampling_ratio=box_head.POOLER_SAMPLING_RATIO,
                                  pooler_type=box_head.POOLER_TYPE)
        if not inspect.ismethod(cls._build_res5_block):
            # a subclass overriding it as a plain method (older code)
            logger.warning("The behavior of _build_res5_block may change. "
                           "Please do not depend on private methods.")
            cls._build_res5_block = classmethod(cls._build_res5_block)
        ret["res5"], out_channels = cls._build_res5_block(cfg)
        ret["box_predictor"] = FastRCNNOutputLayers(
            cfg, ShapeSpec(channels=out_channels, height=1, width=1))
        if cfg.MODEL.MASK_ON:
            ret["mask_head"] = build_mask_head(
                cfg, ShapeSpec(channels=out_channels, width=resolution, height=resolution))
        return ret

    @classmethod
    def _build_res5_block(cls, cfg):
        """ResNet's res5 stage from cfg.MODEL.RESNETS (three bottleneck blocks, the first of
        stride 2; 8 times res2's widths) and its output channels."""
        from ..backbone.resnet import BottleneckBlock, ResNet

        resnets = cfg.MODEL.RESNETS
        factor = 2 ** 3  # res5's channels are 8 times res2's
        num_groups = resnets.NUM_GROUPS
        bottleneck_channels = num_groups * resnets.WIDTH_PER_GROUP * factor
        out_channels = resnets.RES2_OUT_CHANNELS * factor
        if resnets.DEFORM_ON_PER_STAGE[-1]:
            raise ValueError("Deformable conv is not yet supported in res5 head.")
        blocks = ResNet.make_stage(BottleneckBlock, 3, stride_per_block=[2, 1, 1],
                                   in_channels=out_channels // 2,
                                   bottleneck_channels=bottleneck_channels,
                                   out_channels=out_channels, num_groups=num_groups,
                                   norm=resnets.NORM, stride_in_1x1=resnets.STRIDE_IN_1X1)
        return nn.Sequential(*blocks), out_channels

    def _shared_roi_transform(self, features: List[torch.Tensor], boxes: List[Boxes]):
        return self.res5(self.pooler(features, boxes))

    def forward(self, images: ImageList, features: Dict[str, torch.Tensor],
                proposals: List[Instances], targets: Optional[List[Instances]] = None):
        """See ROIHeads.forward; training returns no detections."""
        del images
        if self.training:
            if not targets:
                raise ValueError("Res5ROIHeads: 'targets' argument is required during training")
            proposals = self.label_and_sample_proposals(proposals, targets)
        del targets

        box_features = self._shared_roi_transform([features[f] for f in self.in_features],
                                                  [x.proposal_boxes for x in proposals])
        predictions = self.box_predictor(box_features.mean(dim=[2, 3]))

        if self.training:
            del features
            losses = self.box_predictor.losses(predictions, proposals)
            if self.mask_on:
                proposals, fg_masks = select_foreground_proposals(proposals, self.num_classes)
                # the mask head reads the foreground regions' res5 features
                mask_features = box_features[torch.cat(fg_masks, dim=0)]
                del box_features
                losses.update(self.mask_head(mask_features, proposals))
            return [], losses
        pred_instances, _ = self.box_predictor.inference(predictions, proposals)
        pred_instances = self.forward_with_given_boxes(features, pred_instances)
        return pred_instances, {}

    def forward_with_given_boxes(self, features: Dict[str, torch.Tensor],
                                 instances: List[Instances]) -> List[Instances]:
        """Inference of the heads other than the box head (the mask head) on given detections
        (pred_boxes, pred_classes): the same Instances with pred_masks set."""
        if self.training:
            raise ValueError("forward_with_given_boxes is for inference (call eval() first)")
        if not (instances[0].has("pred_boxes") and instances[0].has("pred_classes")):
            raise ValueError("forward_with_given_boxes: the instances need pred_boxes and "
                             "pred_classes")
        if self.mask_on:
            x = self._shared_roi_transform([features[f] for f in self.in_features],
                                           [x.pred_boxes for x in instances])
            return self.mask_head(x, instances)
        return instances


@ROI_HEADS_REGISTRY.register()
class StandardROIHeads(ROIHeads):
    """A box head (FastRCNNConvFCHead + FastRCNNOutputLayers), and optionally a mask and a
    keypoint head, each pooling its own features; the FPN and C5 models' heads. In inference
    the mask and keypoint heads run on the box head's detections."""

    # constants for TorchScript: only the branches of the heads present are compiled
    mask_on: torch.jit.Final[bool]
    keypoint_on: torch.jit.Final[bool]

    @configurable
    def __init__(self, *, box_in_features: List[str], box_pooler: ROIPooler,
                 box_head: nn.Module, box_predictor: nn.Module,
                 mask_in_features: Optional[List[str]] = None,
                 mask_pooler: Optional[ROIPooler] = None, mask_head: Optional[nn.Module] = None,
                 keypoint_in_features: Optional[List[str]] = None,
                 keypoint_pooler: Optional[ROIPooler] = None,
                 keypoint_head: Optional[nn.Module] = None, train_on_pred_boxes: bool = False,
                 **kwargs):
        """box_in_features, box_pooler, box_head, box_predictor: the box branch; mask_* /
        keypoint_*: those branches (in_features None: no such head; pooler None: the head
        reads the feature maps by name); train_on_pred_boxes: the mask and keypoint heads
        train on the box head's boxes rather than the proposals. kwargs go to ROIHeads."""
        super().__init__(**kwargs)
        self.in_features = self.box_in_features = box_in_features
        self.box_pooler = box_pooler
        self.box_head = box_head
        self.box_predictor = box_predictor

        self.mask_on = mask_in_features is not None
        if self.mask_on:
            self.mask_in_features = mask_in_features
            self.mask_pooler = mask_pooler
            self.mask_head = mask_head

        self.keypoint_on = keypoint_in_features is not None
        if self.keypoint_on:
            self.keypoint_in_features = keypoint_in_features
            self.keypoint_pooler = keypoint_pooler
            self.keypoint_head = keypoint_head

        self.train_on_pred_boxes = train_on_pred_boxes

    @classmethod
    def from_config(cls, cfg, input_shape):
        ret = super().from_config(cfg)
        ret["train_on_pred_boxes"] = cfg.MODEL.ROI_BOX_HEAD.TRAIN_ON_PRED_BOXES
        # a subclass may override an _init_*_head as a plain method and call it itself
        if inspect.ismethod(cls._init_box_head):
            ret.update(cls._init_box_head(cfg, input_shape))
        if inspect.ismethod(cls._init_mask_head):
            ret.update(cls._init_mask_head(cfg, input_shape))
        if inspect.ismethod(cls._init_keypoint_head):
            ret.update(cls._init_keypoint_head(cfg, input_shape))
        return ret

    @classmethod
    def _init_box_head(cls, cfg, input_shape):
        in_features = cfg.MODEL.ROI_HEADS.IN_FEATURES
        head = cfg.MODEL.ROI_BOX_HEAD
        resolution = head.POOLER_RESOLUTION
        # one head for every level: the levels must have the same channels
        in_channels = {input_shape[f].channels for f in in_features}
        if len(in_channels) != 1:
            raise ValueError(f"StandardROIHeads: the features {list(in_features)} have "
                             f"different channels {sorted(in_channels)}")
        in_channels = in_channels.pop()
        box_pooler = ROIPooler(output_size=resolution,
                               scales=tuple(1.0 / input_shape[k].stride for k in in_features),
                               sampling_ratio=head.POOLER_SAMPLING_RATIO,
                               pooler_type=head.POOLER_TYPE)
        box_head = build_box_head(
            cfg, ShapeSpec(channels=in_channels, height=resolution, width=resolution))
        box_predictor = FastRCNNOutputLayers(cfg, box_head.output_shape)
        return {"box_in_features": in_features, "box_pooler": box_pooler, "box_head": box_head,
                "box_predictor": box_predictor}

    @classmethod
    def _pooled_head_inputs(cls, head, in_features, input_shape):
        """(pooler or None, the head's input shape) of a mask or keypoint head config: with a
        POOLER_TYPE the pooled regions' shape, without one the feature maps' shapes by name."""
        resolution = head.POOLER_RESOLUTION
        if not head.POOLER_TYPE:
            return None, {f: input_shape[f] for f in in_features}
        pooler = ROIPooler(output_size=resolution,
                           scales=tuple(1.0 / input_shape[k].stride for k in in_features),
                           sampling_ratio=head.POOLER_SAMPLING_RATIO,
                           pooler_type=head.POOLER_TYPE)
        in_channels = input_shape[in_features[0]].channels
        return pooler, ShapeSpec(channels=in_channels, width=resolution, height=resolution)

    @classmethod
    def _init_mask_head(cls, cfg, input_shape):
        if not cfg.MODEL.MASK_ON:
            return {}
        in_features = cfg.MODEL.ROI_HEADS.IN_FEATURES
        pooler, shape = cls._pooled_head_inputs(cfg.MODEL.ROI_MASK_HEAD, in_features,
                                                input_shape)
        return {"mask_in_features": in_features, "mask_pooler": pooler,
                "mask_head": build_mask_head(cfg, shape)}

    @classmethod
    def _init_keypoint_head(cls, cfg, input_shape):
        if not cfg.MODEL.KEYPOINT_ON:
            return {}
        in_features = cfg.MODEL.ROI_HEADS.IN_FEATURES
        pooler, shape = cls._pooled_head_inputs(cfg.MODEL.ROI_KEYPOINT_HEAD, in_features,
                                                input_shape)
        return {"keypoint_in_features": in_features, "keypoint_pooler": pooler,
                "keypoint_head": build_keypoint_head(cfg, shape)}

    def forward(self, images: ImageList, features: Dict[str, torch.Tensor],
                proposals: List[Instances], targets: Optional[List[Instances]] = None
                ) -> Tuple[List[Instances], Dict[str, torch.Tensor]]:
        """See ROIHeads.forward; training returns the sampled proposals with the losses."""
        del images
        if self.training:
            assert targets, "'targets' argument is required during training"
            proposals = self.label_and_sample_proposals(proposals, targets)
        del targets

        if self.training:
            losses = self._forward_box(features, proposals)
            # the mask and keypoint heads train on the same proposals (with
            # train_on_pred_boxes, their boxes are now the box head's)
            losses.update(self._forward_mask(features, proposals))
            losses.update(self._forward_keypoint(features, proposals))
            return proposals, losses
        pred_instances = self._forward_box(features, proposals)
        # the mask and keypoint heads run on the detections only
        pred_instances = self.forward_with_given_boxes(features, pred_instances)
        return pred_instances, {}

    def forward_with_given_boxes(self, features: Dict[str, torch.Tensor],
                                 instances: List[Instances]) -> List[Instances]:
        """Inference of the mask and keypoint heads on given detections (pred_boxes,
        pred_classes): the same Instances with pred_masks / pred_keypoints set."""
        assert not self.training, "forward_with_given_boxes is for inference"
        assert instances[0].has("pred_boxes") and instances[0].has("pred_classes"), \
            "forward_with_given_boxes: the instances need pred_boxes and pred_classes"
        instances = self._forward_mask(features, instances)
        instances = self._forward_keypoint(features, instances)
        return instances

    def _forward_box(self, features: Dict[str, torch.Tensor], proposals: List[Instances]):
        """Training: the box losses (with train_on_pred_boxes, the proposals' boxes replaced
        in place by the boxes decoded for their gt class); inference: the detections."""
        features = [features[f] for f in self.box_in_features]
        box_features = self.box_pooler(features, [x.proposal_boxes for x in proposals])
        box_features = self.box_head(box_features)
        predictions = self.box_predictor(box_features)
        del box_features

        if self.training:
            losses = self.box_predictor.losses(predictions, proposals)
            if self.train_on_pred_boxes:  # after the losses, which read the proposals
                with torch.no_grad():
                    pred_boxes = self.box_predictor.predict_boxes_for_gt_classes(predictions,
                                                                                 proposals)
                    for proposals_per_image, boxes in zip(proposals, pred_boxes):
                        proposals_per_image.proposal_boxes = Boxes(boxes)
            return losses
        pred_instances, _ = self.box_predictor.inference(predictions, proposals)
        return pred_instances

    def _forward_mask(self, features: Dict[str, torch.Tensor], instances: List[Instances]):
        """Training: {"loss_mask"} on the foreground proposals; inference: the instances with
        pred_masks. Nothing without a mask head."""
        if not self.mask_on:
            return {} if self.training else instances
        if self.training:
            instances, _ = select_foreground_proposals(instances, self.num_classes)
        if self.mask_pooler is not None:
            features = [features[f] for f in self.mask_in_features]
            boxes = [x.proposal_boxes if self.training else x.pred_boxes for x in instances]
            features = self.mask_pooler(features, boxes)
        else:
            features = {f: features[f] for f in self.mask_in_features}
        return self.mask_head(features, instances)

    def _forward_keypoint(self, features: Dict[str, torch.Tensor], instances: List[Instances]):
        """Training: {"loss_keypoint"} on the foreground proposals with a visible keypoint;
        inference: the instances with pred_keypoints. Nothing without a keypoint head."""
        if not self.keypoint_on:
            return {} if self.training else instances
        if self.training:
            instances, _ = select_foreground_proposals(instances, self.num_classes)
            instances = select_proposals_with_visible_keypoints(instances)
        if self.keypoint_pooler is not None:
            features = [features[f] for f in self.keypoint_in_features]
            boxes = [x.proposal_boxes if self.training else x.pred_boxes for x in instances]
            features = self.keypoint_pooler(features, boxes)
        else:
            features = {f: features[f] for f in self.keypoint_in_features}
        return self.keypoint_head(features, instances)
