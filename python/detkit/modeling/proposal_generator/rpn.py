"""Detectron2's Region Proposal Network (detectron2.modeling.proposal_generator.rpn): a head
scores and refines the anchors of every feature map; in training each image's anchors are
matched to its ground truth and a sample of them gives the losses; the refined anchors, best
first after NMS, are the proposals. Scriptable (scripting_with_instances) in eval mode.

Shapes: N images, L feature maps, A anchors per cell, Ri = Hi * Wi * A anchors of map i, R their
sum over the maps."""
from typing import Dict, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from ...config.configurable import configurable
from ...layers import ShapeSpec
from ...structures import Boxes, ImageList, Instances, pairwise_iou
from ...utils.events import get_event_storage
from ..anchor_generator import build_anchor_generator
from ..box_regression import Box2BoxTransform, _dense_box_regression_loss
from ..matcher import Matcher
from ..sampling import subsample_labels
from .build import PROPOSAL_GENERATOR_REGISTRY
from .proposal_utils import find_top_rpn_proposals
from .rpn_head import RPN_HEAD_REGISTRY, StandardRPNHead, build_rpn_head

__all__ = ["RPN", "RPN_HEAD_REGISTRY", "StandardRPNHead", "build_rpn_head"]

_BOX_REG_LOSS_TYPES = ("smooth_l1", "giou", "diou", "ciou")


@PROPOSAL_GENERATOR_REGISTRY.register()
class RPN(nn.Module):
    """Faster R-CNN's region proposal network over the feature maps `in_features`."""

    @configurable
    def __init__(self, *, in_features: List[str], head: nn.Module, anchor_generator: nn.Module,
                 anchor_matcher: Matcher, box2box_transform: Box2BoxTransform,
                 batch_size_per_image: int, positive_fraction: float,
                 pre_nms_topk: Tuple[int, int], post_nms_topk: Tuple[int, int],
                 nms_thresh: float = 0.7, min_box_size: float = 0.0,
                 anchor_boundary_thresh: float = -1.0,
                 loss_weight: Union[float, Dict[str, float]] = 1.0,
                 box_reg_loss_type: str = "smooth_l1", smooth_l1_beta: float = 0.0):
        """head: predicts (logits, deltas) per map from the list of maps; anchor_generator: the
        anchors of each map; anchor_matcher labels anchors by their IoU with the ground truth;
        batch_size_per_image anchors sampled per image, at most positive_fraction of them
        foreground; pre_nms_topk / post_nms_topk: (training, inference) boxes kept per map
        before NMS / per image after it; min_box_size: proposals with a side not above it are
        dropped; anchor_boundary_thresh >= 0 ignores anchors reaching that far out of the image
        (legacy); loss_weight: one weight, or {"loss_rpn_cls": w, "loss_rpn_loc": w}.
        box_reg_loss_type: smooth_l1 (smooth_l1_beta; 0 is L1), giou, diou or ciou."""
        super().__init__()
        if box_reg_loss_type not in _BOX_REG_LOSS_TYPES:
            raise ValueError(f"RPN: box_reg_loss_type '{box_reg_loss_type}' is not one of "
                             f"{', '.join(_BOX_REG_LOSS_TYPES)}")
        if len(pre_nms_topk) != 2 or len(post_nms_topk) != 2:
            raise ValueError("RPN: pre_nms_topk and post_nms_topk are (training, inference) "
                             "pairs")
        self.in_features = list(in_features)
        self.rpn_head = head
        self.anchor_generator = anchor_generator
        self.anchor_matcher = anchor_matcher
        self.box2box_transform = box2box_transform
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction
        # keyed by self.training
        self.pre_nms_topk = {True: int(pre_nms_topk[0]), False: int(pre_nms_topk[1])}
        self.post_nms_topk = {True: int(post_nms_topk[0]), False: int(post_nms_topk[1])}
        self.nms_thresh = nms_thresh
        self.min_box_size = float(min_box_size)
        self.anchor_boundary_thresh = anchor_boundary_thresh
        if isinstance(loss_weight, (int, float)):
            loss_weight = {"loss_rpn_cls": float(loss_weight), "loss_rpn_loc": float(loss_weight)}
        self.loss_weight = loss_weight
        self.box_reg_loss_type = box_reg_loss_type
        self.smooth_l1_beta = smooth_l1_beta

    @classmethod
    def from_config(cls, cfg, input_shape: Dict[str, ShapeSpec]):
        rpn = cfg.MODEL.RPN
        in_features = list(rpn.IN_FEATURES)
        missing = [f for f in in_features if f not in input_shape]
        if missing:
            raise KeyError(f"RPN: MODEL.RPN.IN_FEATURES names {missing}, not among the "
                           f"backbone's outputs {sorted(input_shape)}")
        shapes = [input_shape[f] for f in in_features]
        return {
            "in_features": in_features,
            "head": build_rpn_head(cfg, shapes),
            "anchor_generator": build_anchor_generator(cfg, shapes),
            "anchor_matcher": Matcher(list(rpn.IOU_THRESHOLDS), list(rpn.IOU_LABELS),
                                      allow_low_quality_matches=True),
            "box2box_transform": Box2BoxTransform(
                weights=tuple(float(w) for w in rpn.BBOX_REG_WEIGHTS)),
            "batch_size_per_image": rpn.BATCH_SIZE_PER_IMAGE,
            "positive_fraction": rpn.POSITIVE_FRACTION,
            "pre_nms_topk": (rpn.PRE_NMS_TOPK_TRAIN, rpn.PRE_NMS_TOPK_TEST),
            "post_nms_topk": (rpn.POST_NMS_TOPK_TRAIN, rpn.POST_NMS_TOPK_TEST),
            "nms_thresh": rpn.NMS_THRESH,
            "min_box_size": cfg.MODEL.PROPOSAL_GENERATOR.MIN_SIZE,
            "anchor_boundary_thresh": rpn.BOUNDARY_THRESH,
            "loss_weight": {"loss_rpn_cls": rpn.LOSS_WEIGHT,
                            "loss_rpn_loc": rpn.BBOX_REG_LOSS_WEIGHT * rpn.LOSS_WEIGHT},
            "box_reg_loss_type": rpn.BBOX_REG_LOSS_TYPE,
            "smooth_l1_beta": rpn.SMOOTH_L1_BETA,
        }

    def _subsample_labels(self, label: torch.Tensor) -> torch.Tensor:
        """label (R,) of -1 / 0 / 1, rewritten in place: only a random sample of
        batch_size_per_image anchors (subsample_labels) keep 1 or 0, the others become -1."""
        foreground, background = subsample_labels(label, self.batch_size_per_image,
                                                  self.positive_fraction, 0)
        label.fill_(-1)
        label[foreground] = 1
        label[background] = 0
        return label

    @torch.jit.unused
    @torch.no_grad()
    def label_and_sample_anchors(self, anchors: List[Boxes], gt_instances: List[Instances]
                                 ) -> Tuple[List[torch.Tensor], List[torch.Tensor]]:
        """For each image: the sampled labels (R,) of all anchors (-1 ignored, 0 background,
        1 foreground) and the (R, 4) ground-truth box each anchor matches (zeros when the image
        has none; meaningful for foreground anchors only)."""
        all_anchors = Boxes.cat(anchors)
        labels = []
        matched_boxes = []
        for instances in gt_instances:
            gt_boxes = instances.gt_boxes
            matches, labels_i = self.anchor_matcher(pairwise_iou(gt_boxes, all_anchors))
            labels_i = labels_i.to(device=gt_boxes.device)
            if self.anchor_boundary_thresh >= 0:
                inside = all_anchors.inside_box(instances.image_size,
                                                self.anchor_boundary_thresh)
                labels_i[~inside] = -1
            labels.append(self._subsample_labels(labels_i))
            if len(gt_boxes) == 0:
                matched_boxes.append(torch.zeros_like(all_anchors.tensor))
            else:
                matched_boxes.append(gt_boxes[matches].tensor)
        return labels, matched_boxes

    @torch.jit.unused
    def losses(self, anchors: List[Boxes], pred_objectness_logits: List[torch.Tensor],
               gt_labels: List[torch.Tensor], pred_anchor_deltas: List[torch.Tensor],
               gt_boxes: List[torch.Tensor]) -> Dict[str, torch.Tensor]:
        """loss_rpn_cls (binary cross-entropy of the sampled anchors) and loss_rpn_loc (box
        regression of the foreground ones), both sums divided by batch_size_per_image * N and
        weighted by loss_weight. Records rpn/num_pos_anchors and rpn/num_neg_anchors (per
        image) in the current event storage."""
        num_images = len(gt_labels)
        labels = torch.stack(gt_labels)  # (N, R)
        foreground = labels == 1
        storage = get_event_storage()
        storage.put_scalar("rpn/num_pos_anchors", foreground.sum().item() / num_images)
        storage.put_scalar("rpn/num_neg_anchors", (labels == 0).sum().item() / num_images)

        loc_loss = _dense_box_regression_loss(
            anchors, self.box2box_transform, pred_anchor_deltas, gt_boxes, foreground,
            box_reg_loss_type=self.box_reg_loss_type, smooth_l1_beta=self.smooth_l1_beta)
        sampled = labels >= 0
        cls_loss = F.binary_cross_entropy_with_logits(
            torch.cat(pred_objectness_logits, dim=1)[sampled], labels[sampled].to(torch.float32),
            reduction="sum")
        normalizer = self.batch_size_per_image * num_images
        losses = {"loss_rpn_cls": cls_loss / normalizer, "loss_rpn_loc": loc_loss / normalizer}
        return {name: value * self.loss_weight.get(name, 1.0) for name, value in losses.items()}

    def forward(self, images: ImageList, features: Dict[str, torch.Tensor],
                gt_instances: Optional[List[Instances]] = None):
        """images: the N input images; features: maps by name ((N, C, Hi, Wi) each);
        gt_instances: N Instances with gt_boxes, needed in training. Returns the proposals (N
        Instances: proposal_boxes, objectness_logits, best first) and the losses ({} in
        inference)."""
        maps = [features[f] for f in self.in_features]
        anchors = self.anchor_generator(maps)
        logits, deltas = self.rpn_head(maps)
        # (N, A, Hi, Wi) -> (N, Hi * Wi * A), the anchors' order
        pred_objectness_logits = [x.permute(0, 2, 3, 1).flatten(1) for x in logits]
        # (N, A * B, Hi, Wi) -> (N, Hi * Wi * A, B)
        box_dim = self.anchor_generator.box_dim
        pred_anchor_deltas = [
            x.view(x.shape[0], -1, box_dim, x.shape[-2], x.shape[-1])
            .permute(0, 3, 4, 1, 2).flatten(1, -2)
            for x in deltas]

        losses: Dict[str, torch.Tensor] = {}
        if self.training:
            assert gt_instances is not None, "RPN requires gt_instances in training!"
            gt_labels, gt_boxes = self.label_and_sample_anchors(anchors, gt_instances)
            losses = self.losses(anchors, pred_objectness_logits, gt_labels, pred_anchor_deltas,
                                 gt_boxes)
        proposals = self.predict_proposals(anchors, pred_objectness_logits, pred_anchor_deltas,
                                           images.image_sizes)
        return proposals, losses

    def predict_proposals(self, anchors: List[Boxes], pred_objectness_logits: List[torch.Tensor],
                          pred_anchor_deltas: List[torch.Tensor],
                          image_sizes: List[Tuple[int, int]]):
        """The anchors moved by their deltas, then find_top_rpn_proposals with this mode's
        top-k: N Instances (proposal_boxes, objectness_logits), best first. No gradient flows
        to the boxes (they are fixed inputs of what follows)."""
        with torch.no_grad():
            boxes = self._decode_proposals(anchors, pred_anchor_deltas)
            return find_top_rpn_proposals(
                boxes, pred_objectness_logits, image_sizes, self.nms_thresh,
                self.pre_nms_topk[self.training], self.post_nms_topk[self.training],
                self.min_box_size, self.training)

    def _decode_proposals(self, anchors: List[Boxes], pred_anchor_deltas: List[torch.Tensor]):
        """One (N, Ri, B) tensor of decoded boxes per map."""
        num_images = pred_anchor_deltas[0].shape[0]
        proposals = []
        for anchors_i, deltas_i in zip(anchors, pred_anchor_deltas):
            box_dim = anchors_i.tensor.size(1)
            repeated = anchors_i.tensor.unsqueeze(0).expand(num_images, -1, -1)
            decoded = self.box2box_transform.apply_deltas(deltas_i.reshape(-1, box_dim),
                                                          repeated.reshape(-1, box_dim))
            proposals.append(decoded.view(num_images, -1, box_dim))
        return proposals
