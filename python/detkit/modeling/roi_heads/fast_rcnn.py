"""Detectron2's Fast R-CNN box predictor (detectron2.modeling.roi_heads.fast_rcnn): per region,
K + 1 class logits (background last) and box deltas; its losses (cross-entropy or sigmoid BCE,
optionally federated; smooth-L1 / GIoU / DIoU / CIoU box regression on foreground regions over
all regions) and its inference (per-class score threshold, per-class NMS, top k per image).
Scriptable for inference."""
import logging
from typing import Callable, Dict, List, Optional, Tuple, Union

import torch
from torch import nn
from torch.nn import functional as F

from ...config import configurable
from ...layers import ShapeSpec, batched_nms, cat, cross_entropy, nonzero_tuple
from ...structures import Boxes, Instances
from ...utils.events import get_event_storage
from ..box_regression import Box2BoxTransform

__all__ = ["fast_rcnn_inference", "fast_rcnn_inference_single_image", "FastRCNNOutputLayers"]

logger = logging.getLogger(__name__)


def fast_rcnn_inference(boxes: List[torch.Tensor], scores: List[torch.Tensor],
                        image_shapes: List[Tuple[int, int]], score_thresh: float,
                        nms_thresh: float, topk_per_image: int):
    """Per image i: boxes[i] (Ri, K * 4) or (Ri, 4), scores[i] (Ri, K + 1), image_shapes[i]
    (height, width). Returns the detections (an Instances per image: pred_boxes, scores,
    pred_classes) and, per image, the index in [0, Ri) of the region each detection came from."""
    per_image = [
        fast_rcnn_inference_single_image(boxes_i, scores_i, shape_i, score_thresh, nms_thresh,
                                         topk_per_image)
        for scores_i, boxes_i, shape_i in zip(scores, boxes, image_shapes)
    ]
    return [r[0] for r in per_image], [r[1] for r in per_image]


def fast_rcnn_inference_single_image(boxes, scores, image_shape: Tuple[int, int],
                                     score_thresh: float, nms_thresh: float, topk_per_image: int):
    """One image of fast_rcnn_inference: regions with a non-finite box or score dropped (the
    indices returned still count them, unlike Detectron2's), boxes clipped to the image, every
    (region, class) pair scoring above score_thresh kept, NMS per class, then the
    topk_per_image best (all when negative)."""
    finite = torch.isfinite(boxes).all(dim=1) & torch.isfinite(scores).all(dim=1)
    input_rows: Optional[torch.Tensor] = None
    if not finite.all():
        input_rows = finite.nonzero().squeeze(1)  # the regions' indices in the input
        boxes = boxes[finite]
        scores = scores[finite]

    scores = scores[:, :-1]  # the background column is not a detection
    num_box_classes = boxes.shape[1] // 4
    clipped = Boxes(boxes.reshape(-1, 4))
    clipped.clip(image_shape)
    boxes = clipped.tensor.view(-1, num_box_classes, 4)

    above = scores > score_thresh  # (R, K)
    pairs = above.nonzero()  # (R', 2): region, class
    if num_box_classes == 1:
        boxes = boxes[pairs[:, 0], 0]
    else:
        boxes = boxes[above]
    scores = scores[above]

    keep = batched_nms(boxes, scores, pairs[:, 1], nms_thresh)
    if topk_per_image >= 0:
        keep = keep[:topk_per_image]
    boxes, scores, pairs = boxes[keep], scores[keep], pairs[keep]

    result = Instances(image_shape)
    result.pred_boxes = Boxes(boxes)
    result.scores = scores
    result.pred_classes = pairs[:, 1]
    regions = pairs[:, 0] if input_rows is None else input_rows[pairs[:, 0]]
    return result, regions


def _log_classification_stats(pred_logits, gt_classes, prefix="fast_rcnn"):
    """Accuracy over all regions, and over the foreground ones the accuracy and the fraction
    predicted as background, into the current EventStorage."""
    num_regions = gt_classes.numel()
    if num_regions == 0:
        return
    predicted = pred_logits.argmax(dim=1)
    background = pred_logits.shape[1] - 1
    foreground = (gt_classes >= 0) & (gt_classes < background)
    num_fg = foreground.nonzero().numel()
    fg_gt, fg_predicted = gt_classes[foreground], predicted[foreground]

    storage = get_event_storage()
    storage.put_scalar(f"{prefix}/cls_accuracy",
                       (predicted == gt_classes).nonzero().numel() / num_regions)
    if num_fg > 0:
        storage.put_scalar(f"{prefix}/fg_cls_accuracy",
                           (fg_predicted == fg_gt).nonzero().numel() / num_fg)
        storage.put_scalar(f"{prefix}/false_negative",
                           (fg_predicted == background).nonzero().numel() / num_fg)


class FastRCNNOutputLayers(nn.Module):
    """Two linear layers on the region features: cls_score (K + 1 logits) and bbox_pred (deltas
    for each of the K classes, or one class-agnostic set)."""

    @configurable
    def __init__(self, input_shape: ShapeSpec, *, box2box_transform, num_classes: int,
                 test_score_thresh: float = 0.0, test_nms_thresh: float = 0.5,
                 test_topk_per_image: int = 100, cls_agnostic_bbox_reg: bool = False,
                 smooth_l1_beta: float = 0.0, box_reg_loss_type: str = "smooth_l1",
                 loss_weight: Union[float, Dict[str, float]] = 1.0,
                 use_fed_loss: bool = False, use_sigmoid_ce: bool = False,
                 get_fed_loss_cls_weights: Optional[Callable] = None,
                 fed_loss_num_classes: int = 50):
        """input_shape: the region features' shape (an int is the channels); box2box_transform:
        the box encoding (Box2BoxTransform or Box2BoxTransformRotated); num_classes: foreground
        classes; loss_weight: one weight for both losses or a dict by loss name ("loss_cls",
        "loss_box_reg"); use_fed_loss (needs use_sigmoid_ce): the federated loss, over the
        image's classes and negatives drawn with the weights get_fed_loss_cls_weights() gives."""
        super().__init__()
        if isinstance(input_shape, int):
            input_shape = ShapeSpec(channels=input_shape)
        self.num_classes = num_classes
        input_size = input_shape.channels * (input_shape.width or 1) * (input_shape.height or 1)
        self.cls_score = nn.Linear(input_size, num_classes + 1)
        num_box_classes = 1 if cls_agnostic_bbox_reg else num_classes
        box_dim = len(box2box_transform.weights)
        self.bbox_pred = nn.Linear(input_size, num_box_classes * box_dim)

        nn.init.normal_(self.cls_score.weight, std=0.01)
        nn.init.normal_(self.bbox_pred.weight, std=0.001)
        for layer in (self.cls_score, self.bbox_pred):
            nn.init.constant_(layer.bias, 0)

        self.box2box_transform = box2box_transform
        self.smooth_l1_beta = smooth_l1_beta
        self.test_score_thresh = test_score_thresh
        self.test_nms_thresh = test_nms_thresh
        self.test_topk_per_image = test_topk_per_image
        self.box_reg_loss_type = box_reg_loss_type
        if isinstance(loss_weight, float):
            loss_weight = {"loss_cls": loss_weight, "loss_box_reg": loss_weight}
        self.loss_weight = loss_weight
        self.use_fed_loss = use_fed_loss
        self.use_sigmoid_ce = use_sigmoid_ce
        self.fed_loss_num_classes = fed_loss_num_classes

        if self.use_fed_loss:
            if not self.use_sigmoid_ce:
                raise ValueError("FastRCNNOutputLayers: use_fed_loss needs use_sigmoid_ce=True")
            if get_fed_loss_cls_weights is None:
                raise ValueError("FastRCNNOutputLayers: use_fed_loss needs "
                                 "get_fed_loss_cls_weights")
            weights = get_fed_loss_cls_weights()
            if len(weights) != self.num_classes:
                raise ValueError(f"FastRCNNOutputLayers: get_fed_loss_cls_weights gave "
                                 f"{len(weights)} weights for {self.num_classes} classes")
            self.register_buffer("fed_loss_cls_weights", weights)

    @classmethod
    def from_config(cls, cfg, input_shape):
        box_head = cfg.MODEL.ROI_BOX_HEAD

        def fed_loss_weights():
            from ...data.detection_utils import get_fed_loss_cls_weights
            return get_fed_loss_cls_weights(dataset_names=cfg.DATASETS.TRAIN,
                                            freq_weight_power=box_head.FED_LOSS_FREQ_WEIGHT_POWER)

        return {
            "input_shape": input_shape,
            "box2box_transform": Box2BoxTransform(
                weights=tuple(float(w) for w in box_head.BBOX_REG_WEIGHTS)),
            "num_classes": cfg.MODEL.ROI_HEADS.NUM_CLASSES,
            "cls_agnostic_bbox_reg": box_head.CLS_AGNOSTIC_BBOX_REG,
            "smooth_l1_beta": box_head.SMOOTH_L1_BETA,
            "test_score_thresh": cfg.MODEL.ROI_HEADS.SCORE_THRESH_TEST,
            "test_nms_thresh": cfg.MODEL.ROI_HEADS.NMS_THRESH_TEST,
            "test_topk_per_image": cfg.TEST.DETECTIONS_PER_IMAGE,
            "box_reg_loss_type": box_head.BBOX_REG_LOSS_TYPE,
            "loss_weight": {"loss_box_reg": box_head.BBOX_REG_LOSS_WEIGHT},
            "use_fed_loss": box_head.USE_FED_LOSS,
            "use_sigmoid_ce": box_head.USE_SIGMOID_CE,
            "get_fed_loss_cls_weights": fed_loss_weights,
            "fed_loss_num_classes": box_head.FED_LOSS_NUM_CLASSES,
        }

    def forward(self, x):
        """x (N, ...) region features: (N, K + 1) class logits and (N, K * B) or (N, B) box
        deltas."""
        if x.dim() > 2:
            x = torch.flatten(x, start_dim=1)
        scores = self.cls_score(x)
        proposal_deltas = self.bbox_pred(x)
        return scores, proposal_deltas

    def losses(self, predictions, proposals):
        """predictions: forward()'s output for the regions of `proposals` (Instances with
        proposal_boxes, gt_classes and, when any region is foreground, gt_boxes): {"loss_cls",
        "loss_box_reg"}, each times its loss_weight."""
        scores, proposal_deltas = predictions
        gt_classes = (cat([p.gt_classes for p in proposals], dim=0) if len(proposals)
                      else torch.empty(0, dtype=torch.long, device=scores.device))
        _log_classification_stats(scores, gt_classes)

        if len(proposals):
            proposal_boxes = cat([p.proposal_boxes.tensor for p in proposals], dim=0)
            if proposal_boxes.requires_grad:
                raise ValueError("FastRCNNOutputLayers.losses: proposal boxes must not require "
                                 "gradients")
            # a region without gt_boxes is background: its stand-in box is never regressed
            gt_boxes = cat([(p.gt_boxes if p.has("gt_boxes") else p.proposal_boxes).tensor
                            for p in proposals], dim=0)
        else:
            proposal_boxes = gt_boxes = torch.empty((0, 4), device=proposal_deltas.device)

        if self.use_sigmoid_ce:
            loss_cls = self.sigmoid_cross_entropy_loss(scores, gt_classes)
        else:
            loss_cls = cross_entropy(scores, gt_classes, reduction="mean")
        losses = {
            "loss_cls": loss_cls,
            "loss_box_reg": self.box_reg_loss(proposal_boxes, gt_boxes, proposal_deltas,
                                              gt_classes),
        }
        return {name: value * self.loss_weight.get(name, 1.0) for name, value in losses.items()}

    def get_fed_loss_classes(self, gt_classes, num_fed_loss_classes, num_classes, weight):
        """The classes the federated loss covers: the ground truths' classes, and when fewer
        than num_fed_loss_classes, other classes drawn without replacement with probability
        `weight` up to that number."""
        present = torch.unique(gt_classes)
        prob = present.new_ones(num_classes + 1).float()
        prob[-1] = 0
        if len(present) >= num_fed_loss_classes:
            return present
        prob[:num_classes] = weight.float().clone()
        prob[present] = 0
        drawn = torch.multinomial(prob, num_fed_loss_classes - len(present), replacement=False)
        return torch.cat([present, drawn])

    def sigmoid_cross_entropy_loss(self, pred_class_logits, gt_classes):
        """Binary cross-entropy per foreground class (background: all zeros), summed and divided
        by the number of regions; with use_fed_loss only over get_fed_loss_classes."""
        if pred_class_logits.numel() == 0:
            return pred_class_logits.new_zeros([1])[0]
        num_regions = pred_class_logits.shape[0]
        num_fg = pred_class_logits.shape[1] - 1
        target = pred_class_logits.new_zeros(num_regions, num_fg + 1)
        target[range(len(gt_classes)), gt_classes] = 1
        target = target[:, :num_fg]
        loss = F.binary_cross_entropy_with_logits(pred_class_logits[:, :-1], target,
                                                  reduction="none")
        if self.use_fed_loss:
            classes = self.get_fed_loss_classes(gt_classes, self.fed_loss_num_classes, num_fg,
                                                self.fed_loss_cls_weights)
            covered = classes.new_zeros(num_fg + 1)
            covered[classes] = 1
            weight = covered[:num_fg].view(1, num_fg).expand(num_regions, num_fg).float()
            loss = loss * weight
        return torch.sum(loss) / num_regions

    def box_reg_loss(self, proposal_boxes, gt_boxes, pred_deltas, gt_classes):
        """The box loss (box_reg_loss_type) of the foreground regions' deltas for their
        ground-truth class, summed and divided by the number of all regions (at least 1).
        proposal_boxes, gt_boxes (R, B); pred_deltas (R, B) or (R, K * B); gt_classes (R,)."""
        from ..box_regression import _dense_box_regression_loss  # the RPN's, shared

        box_dim = proposal_boxes.shape[1]
        fg = nonzero_tuple((gt_classes >= 0) & (gt_classes < self.num_classes))[0]
        if pred_deltas.shape[1] == box_dim:  # class-agnostic
            fg_deltas = pred_deltas[fg]
        else:
            fg_deltas = pred_deltas.view(-1, self.num_classes, box_dim)[fg, gt_classes[fg]]
        loss = _dense_box_regression_loss([proposal_boxes[fg]], self.box2box_transform,
                                          [fg_deltas.unsqueeze(0)], [gt_boxes[fg]], ...,
                                          self.box_reg_loss_type, self.smooth_l1_beta)
        # over all regions: each foreground region weighs the same whatever the batch holds
        return loss / max(gt_classes.numel(), 1.0)

    def inference(self, predictions: Tuple[torch.Tensor, torch.Tensor],
                  proposals: List[Instances]):
        """fast_rcnn_inference of the predicted boxes and probabilities, with the test
        thresholds."""
        boxes = self.predict_boxes(predictions, proposals)
        scores = self.predict_probs(predictions, proposals)
        image_shapes = [x.image_size for x in proposals]
        return fast_rcnn_inference(boxes, scores, image_shapes, self.test_score_thresh,
                                   self.test_nms_thresh, self.test_topk_per_image)

    def predict_boxes_for_gt_classes(self, predictions, proposals):
        """Per image, (Ri, B) boxes decoded for each region's gt class (clamped to [0, K - 1],
        so background regions take class K - 1's)."""
        if not len(proposals):
            return []
        _, proposal_deltas = predictions
        proposal_boxes = cat([p.proposal_boxes.tensor for p in proposals], dim=0)
        num_regions, box_dim = proposal_boxes.shape
        boxes = self.box2box_transform.apply_deltas(proposal_deltas, proposal_boxes)
        num_box_classes = boxes.shape[1] // box_dim
        if num_box_classes > 1:
            gt_classes = torch.cat([p.gt_classes for p in proposals], dim=0)
            gt_classes = gt_classes.clamp_(0, num_box_classes - 1)
            rows = torch.arange(num_regions, dtype=torch.long, device=boxes.device)
            boxes = boxes.view(num_regions, num_box_classes, box_dim)[rows, gt_classes]
        return boxes.split([len(p) for p in proposals])

    def predict_boxes(self, predictions: Tuple[torch.Tensor, torch.Tensor],
                      proposals: List[Instances]):
        """Per image, the (Ri, K * B) or (Ri, B) boxes decoded from the deltas."""
        if not len(proposals):
            return []
        _, proposal_deltas = predictions
        regions_per_image = [len(p) for p in proposals]
        proposal_boxes = cat([p.proposal_boxes.tensor for p in proposals], dim=0)
        boxes = self.box2box_transform.apply_deltas(proposal_deltas, proposal_boxes)
        return boxes.split(regions_per_image)

    def predict_probs(self, predictions: Tuple[torch.Tensor, torch.Tensor],
                      proposals: List[Instances]):
        """Per image, the (Ri, K + 1) class probabilities (softmax, or sigmoid with
        use_sigmoid_ce)."""
        scores, _ = predictions
        regions_per_image = [len(p) for p in proposals]
        if self.use_sigmoid_ce:
            probs = scores.sigmoid()
        else:
            probs = F.softmax(scores, dim=-1)
        return probs.split(regions_per_image, dim=0)
