"""Detectron2's Cascade R-CNN heads (detectron2.modeling.roi_heads.cascade_rcnn): box stages of
rising IoU thresholds, each refining the boxes of the one before; inference averages the
stages' class probabilities and keeps the last stage's boxes."""
from typing import List

import torch
from torch import nn
from torch.autograd.function import Function

from ...config import configurable
from ...layers import ShapeSpec
from ...structures import Boxes, Instances, pairwise_iou
from ...utils.events import get_event_storage
from ..box_regression import Box2BoxTransform
from ..matcher import Matcher
from ..poolers import ROIPooler
from .box_head import build_box_head
from .fast_rcnn import FastRCNNOutputLayers, fast_rcnn_inference
from .roi_heads import ROI_HEADS_REGISTRY, StandardROIHeads

__all__ = ["CascadeROIHeads"]


class _ScaleGradient(Function):
    """Identity forward; the gradient multiplied by `scale` backward."""

    @staticmethod
    def forward(ctx, input, scale):
        ctx.scale = scale
        return input

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None


@ROI_HEADS_REGISTRY.register()
class CascadeROIHeads(StandardROIHeads):
    """StandardROIHeads whose box branch is a cascade of (box head, predictor, matcher)
    stages; the box predictors must regress class-agnostic boxes."""

    @configurable
    def __init__(self, *, box_in_features: List[str], box_pooler: ROIPooler,
                 box_heads: List[nn.Module], box_predictors: List[nn.Module],
                 proposal_matchers: List[Matcher], **kwargs):
        """box_heads, box_predictors, proposal_matchers: one per stage; the first matcher
        matches the proposals, the others the boxes of the stage before. kwargs go to
        StandardROIHeads (without proposal_matcher)."""
        if "proposal_matcher" in kwargs:
            raise ValueError("CascadeROIHeads takes 'proposal_matchers=' for each stage instead "
                             "of one 'proposal_matcher='.")
        kwargs["proposal_matcher"] = proposal_matchers[0]
        num_stages = self.num_cascade_stages = len(box_heads)
        if len(box_predictors) != num_stages or len(proposal_matchers) != num_stages:
            raise ValueError(f"CascadeROIHeads: {num_stages} box heads, "
                             f"{len(box_predictors)} box predictors and "
                             f"{len(proposal_matchers)} matchers: one each per stage")
        super().__init__(box_in_features=box_in_features, box_pooler=box_pooler,
                         box_head=nn.ModuleList(box_heads),
                         box_predictor=nn.ModuleList(box_predictors), **kwargs)
        self.proposal_matchers = proposal_matchers

    @classmethod
    def from_config(cls, cfg, input_shape):
        ret = super().from_config(cfg, input_shape)
        ret.pop("proposal_matcher")
        return ret

    @classmethod
    def _init_box_head(cls, cfg, input_shape):
        in_features = cfg.MODEL.ROI_HEADS.IN_FEATURES
        head = cfg.MODEL.ROI_BOX_HEAD
        resolution = head.POOLER_RESOLUTION
        cascade_weights = cfg.MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS
        cascade_ious = cfg.MODEL.ROI_BOX_CASCADE_HEAD.IOUS
        if len(cascade_weights) != len(cascade_ious):
            raise ValueError("CascadeROIHeads: ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS and IOUS "
                             "must have one entry per stage")
        if not head.CLS_AGNOSTIC_BBOX_REG:
            raise ValueError("CascadeROIHeads only support class-agnostic regression now!")
        if cascade_ious[0] != cfg.MODEL.ROI_HEADS.IOU_THRESHOLDS[0]:
            raise ValueError("CascadeROIHeads: the first stage's IoU must be "
                             "ROI_HEADS.IOU_THRESHOLDS[0]")
        in_channels = {input_shape[f].channels for f in in_features}
        if len(in_channels) != 1:
            raise ValueError(f"CascadeROIHeads: the features {list(in_features)} have "
                             f"different channels {sorted(in_channels)}")
        box_pooler = ROIPooler(output_size=resolution,
                               scales=tuple(1.0 / input_shape[k].stride for k in in_features),
                               sampling_ratio=head.POOLER_SAMPLING_RATIO,
                               pooler_type=head.POOLER_TYPE)
        pooled_shape = ShapeSpec(channels=in_channels.pop(), width=resolution,
                                 height=resolution)

        box_heads, box_predictors, proposal_matchers = [], [], []
        for match_iou, weights in zip(cascade_ious, cascade_weights):
            box_head = build_box_head(cfg, pooled_shape)
            box_heads.append(box_head)
            box_predictors.append(FastRCNNOutputLayers(
                cfg, box_head.output_shape,
                box2box_transform=Box2BoxTransform(weights=tuple(float(w) for w in weights))))
            proposal_matchers.append(Matcher([match_iou], [0, 1],
                                             allow_low_quality_matches=False))
        return {"box_in_features": in_features, "box_pooler": box_pooler,
                "box_heads": box_heads, "box_predictors": box_predictors,
                "proposal_matchers": proposal_matchers}

    def forward(self, images, features, proposals, targets=None):
        del images
        if self.training:
            proposals = self.label_and_sample_proposals(proposals, targets)
            losses = self._forward_box(features, proposals, targets)
            losses.update(self._forward_mask(features, proposals))
            losses.update(self._forward_keypoint(features, proposals))
            return proposals, losses
        pred_instances = self._forward_box(features, proposals)
        pred_instances = self.forward_with_given_boxes(features, pred_instances)
        return pred_instances, {}

    def _forward_box(self, features, proposals, targets=None):
        """Runs the stages, each on the boxes the one before predicted (matched again to the
        ground truth in training). Training: every stage's losses, suffixed _stage{k};
        inference: fast_rcnn_inference of the last stage's boxes with the mean of the stages'
        probabilities."""
        features = [features[f] for f in self.box_in_features]
        stage_outputs = []  # (predictor, predictions, proposals)
        prev_boxes = None
        image_sizes = [x.image_size for x in proposals]
        for k in range(self.num_cascade_stages):
            if k > 0:
                proposals = self._create_proposals_from_boxes(prev_boxes, image_sizes)
                if self.training:
                    proposals = self._match_and_label_boxes(proposals, k, targets)
            predictions = self._run_stage(features, proposals, k)
            prev_boxes = self.box_predictor[k].predict_boxes(predictions, proposals)
            stage_outputs.append((self.box_predictor[k], predictions, proposals))

        if self.training:
            losses = {}
            storage = get_event_storage()
            for stage, (predictor, predictions, stage_proposals) in enumerate(stage_outputs):
                with storage.name_scope(f"stage{stage}"):
                    stage_losses = predictor.losses(predictions, stage_proposals)
                losses.update({f"{name}_stage{stage}": value
                               for name, value in stage_losses.items()})
            return losses

        probs_per_stage = [p.predict_probs(out, props) for p, out, props in stage_outputs]
        scores = [sum(list(per_image)) * (1.0 / self.num_cascade_stages)
                  for per_image in zip(*probs_per_stage)]
        predictor, predictions, last_proposals = stage_outputs[-1]
        boxes = predictor.predict_boxes(predictions, last_proposals)
        pred_instances, _ = fast_rcnn_inference(boxes, scores, image_sizes,
                                                predictor.test_score_thresh,
                                                predictor.test_nms_thresh,
                                                predictor.test_topk_per_image)
        return pred_instances

    @torch.no_grad()
    def _match_and_label_boxes(self, proposals, stage, targets):
        """Sets gt_classes (num_classes when below the stage's IoU) and gt_boxes on each
        image's proposals from the stage's matcher; the counts go to the EventStorage."""
        num_fg_samples, num_bg_samples = [], []
        for proposals_per_image, targets_per_image in zip(proposals, targets):
            quality = pairwise_iou(targets_per_image.gt_boxes, proposals_per_image.proposal_boxes)
            matched_idxs, labels = self.proposal_matchers[stage](quality)  # labels 0 or 1
            if len(targets_per_image) > 0:
                gt_classes = targets_per_image.gt_classes[matched_idxs]
                gt_classes[labels == 0] = self.num_classes
                gt_boxes = targets_per_image.gt_boxes[matched_idxs]
            else:
                gt_classes = torch.zeros_like(matched_idxs) + self.num_classes
                gt_boxes = Boxes(targets_per_image.gt_boxes.tensor.new_zeros(
                    (len(proposals_per_image), 4)))
            proposals_per_image.gt_classes = gt_classes
            proposals_per_image.gt_boxes = gt_boxes
            num_fg_samples.append((labels == 1).sum().item())
            num_bg_samples.append(labels.numel() - num_fg_samples[-1])

        storage = get_event_storage()
        storage.put_scalar(f"stage{stage}/roi_head/num_fg_samples",
                           sum(num_fg_samples) / len(num_fg_samples))
        storage.put_scalar(f"stage{stage}/roi_head/num_bg_samples",
                           sum(num_bg_samples) / len(num_bg_samples))
        return proposals

    def _run_stage(self, features, proposals, stage):
        """The stage's predictions (FastRCNNOutputLayers.forward) for the proposals."""
        box_features = self.box_pooler(features, [x.proposal_boxes for x in proposals])
        if self.training:
            # the stages' losses are summed: the features' gradient is scaled back to one
            # stage's
            box_features = _ScaleGradient.apply(box_features, 1.0 / self.num_cascade_stages)
        box_features = self.box_head[stage](box_features)
        return self.box_predictor[stage](box_features)

    def _create_proposals_from_boxes(self, boxes, image_sizes):
        """Per image, Instances with the boxes (detached, clipped) as proposal_boxes; empty
        boxes dropped in training only (inference sums the stages' scores box by box)."""
        proposals = []
        for boxes_per_image, image_size in zip([Boxes(b.detach()) for b in boxes], image_sizes):
            boxes_per_image.clip(image_size)
            if self.training:
                boxes_per_image = boxes_per_image[boxes_per_image.nonempty()]
            proposal = Instances(image_size)
            proposal.proposal_boxes = boxes_per_image
            proposals.append(proposal)
        return proposals
