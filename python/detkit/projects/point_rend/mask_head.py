"""PointRend's mask heads (registered in ROI_MASK_HEAD_REGISTRY): PointRendMaskHead (a coarse
ConvFCHead mask refined at the most uncertain points by a point head, by adaptive subdivision at
inference) and ImplicitPointRendMaskHead (per-instance MLP parameters for the point head)."""
import math
from typing import Dict, List

import numpy as np
import torch
from torch import Tensor, nn

from ...layers import ShapeSpec, cat, interpolate
from ...modeling.roi_heads.mask_head import (ROI_MASK_HEAD_REGISTRY, mask_rcnn_inference,
                                             mask_rcnn_loss)
from ...structures import Boxes
from .coarse_head import ConvFCHead
from .point_features import (generate_regular_grid_point_coords, get_point_coords_wrt_image,
                             get_uncertain_point_coords_on_grid,
                             get_uncertain_point_coords_with_randomness, point_sample,
                             point_sample_fine_grained_features, sample_point_labels)
from .point_head import build_point_head_over_features, roi_mask_point_loss

__all__ = ["ConvFCHead", "ImplicitPointRendMaskHead", "PointRendMaskHead",
           "calculate_uncertainty"]


def calculate_uncertainty(logits, classes):
    """-|logit| of each region's class in `classes` (the single mask when logits has one
    channel): logits (R, C or 1, ...) -> (R, 1, ...), highest where most uncertain."""
    if logits.shape[1] == 1:
        class_logits = logits.clone()
    else:
        rows = torch.arange(logits.shape[0], device=logits.device)
        class_logits = logits[rows, classes].unsqueeze(1)
    return -(torch.abs(class_logits))


@ROI_MASK_HEAD_REGISTRY.register()
class PointRendMaskHead(nn.Module):
    """A coarse mask (ConvFCHead on features point-sampled on a regular grid in each box of
    ROI_MASK_HEAD.IN_FEATURES) and, with ROI_MASK_HEAD.POINT_HEAD_ON, a point head on
    POINT_HEAD.IN_FEATURES: trained at uncertain points, refining the mask by subdivision at
    inference. Built from (cfg, {feature name: ShapeSpec}); no ROI pooler around it."""

    def __init__(self, cfg, input_shape: Dict[str, ShapeSpec]):
        super().__init__()
        self._feature_scales = {k: 1.0 / v.stride for k, v in input_shape.items()}
        self._init_point_head(cfg, input_shape)
        self.roi_pooler_in_features = cfg.MODEL.ROI_MASK_HEAD.IN_FEATURES
        self.roi_pooler_size = cfg.MODEL.ROI_MASK_HEAD.POOLER_RESOLUTION
        in_channels = np.sum([input_shape[f].channels for f in self.roi_pooler_in_features])
        self._init_roi_head(cfg, ShapeSpec(channels=in_channels, width=self.roi_pooler_size,
                                           height=self.roi_pooler_size))

    def _init_roi_head(self, cfg, input_shape):
        self.coarse_head = ConvFCHead(cfg, input_shape)

    def _init_point_head(self, cfg, input_shape):
        self.mask_point_on = cfg.MODEL.ROI_MASK_HEAD.POINT_HEAD_ON
        if not self.mask_point_on:
            return
        point = cfg.MODEL.POINT_HEAD
        self.point_head = build_point_head_over_features(cfg, input_shape, "PointRendMaskHead",
                                                         "ROI_HEADS")
        self.mask_point_in_features = point.IN_FEATURES
        self.mask_point_train_num_points = point.TRAIN_NUM_POINTS
        self.mask_point_oversample_ratio = point.OVERSAMPLE_RATIO
        self.mask_point_importance_sample_ratio = point.IMPORTANCE_SAMPLE_RATIO
        self.mask_point_subdivision_init_resolution = cfg.MODEL.ROI_MASK_HEAD.OUTPUT_SIDE_RESOLUTION
        self.mask_point_subdivision_steps = point.SUBDIVISION_STEPS
        self.mask_point_subdivision_num_points = point.SUBDIVISION_NUM_POINTS
        # a step that would recompute every cell of the upsampled mask anyway: start finer
        while (4 * self.mask_point_subdivision_init_resolution ** 2
               <= self.mask_point_subdivision_num_points):
            self.mask_point_subdivision_init_resolution *= 2
            self.mask_point_subdivision_steps -= 1

    def forward(self, features, instances):
        """features: {name: (N, C, H, W)}; instances: proposals (training: {"loss_mask",
        "loss_mask_point"}) or detections (inference: `instances` with pred_masks set)."""
        if self.training:
            proposal_boxes = [x.proposal_boxes for x in instances]
            coarse_mask = self.coarse_head(self._roi_pooler(features, proposal_boxes))
            losses = {"loss_mask": mask_rcnn_loss(coarse_mask, instances)}
            if not self.mask_point_on:
                return losses
            point_coords, point_labels = self._sample_train_points(coarse_mask, instances)
            fine_grained = self._point_pooler(features, proposal_boxes, point_coords)
            point_logits = self._get_point_logits(fine_grained, point_coords, coarse_mask)
            losses["loss_mask_point"] = roi_mask_point_loss(point_logits, instances,
                                                            point_labels)
            return losses
        pred_boxes = [x.pred_boxes for x in instances]
        coarse_mask = self.coarse_head(self._roi_pooler(features, pred_boxes))
        return self._subdivision_inference(features, coarse_mask, instances)

    def _roi_pooler(self, features: Dict[str, Tensor], boxes: List[Boxes]):
        """Each box's features on a regular roi_pooler_size grid, every map of
        roi_pooler_in_features concatenated (ROIAlign with sampling_ratio 1 per map):
        (R, C, size, size)."""
        features_list = [features[k] for k in self.roi_pooler_in_features]
        scales = [self._feature_scales[k] for k in self.roi_pooler_in_features]
        num_boxes = sum(x.tensor.size(0) for x in boxes)
        size = self.roi_pooler_size
        grid = generate_regular_grid_point_coords(num_boxes, size, boxes[0].device)
        roi_features, _ = point_sample_fine_grained_features(features_list, scales, boxes, grid)
        return roi_features.view(num_boxes, roi_features.shape[1], size, size)

    def _sample_train_points(self, coarse_mask, instances):
        """Uncertain points of the coarse mask of each proposal's gt class and their gt labels."""
        assert self.training
        gt_classes = cat([x.gt_classes for x in instances])
        with torch.no_grad():
            point_coords = get_uncertain_point_coords_with_randomness(
                coarse_mask, lambda logits: calculate_uncertainty(logits, gt_classes),
                self.mask_point_train_num_points, self.mask_point_oversample_ratio,
                self.mask_point_importance_sample_ratio)
            boxes = Boxes.cat([x.proposal_boxes for x in instances])
            coords_in_image = get_point_coords_wrt_image(boxes.tensor, point_coords)
            point_labels = sample_point_labels(instances, coords_in_image)
        return point_coords, point_labels

    def _point_pooler(self, features, boxes, point_coords):
        """The mask_point_in_features maps at the box-relative points: (R, C, P)."""
        features_list = [features[k] for k in self.mask_point_in_features]
        scales = [self._feature_scales[k] for k in self.mask_point_in_features]
        fine_grained, _ = point_sample_fine_grained_features(features_list, scales, boxes,
                                                             point_coords)
        return fine_grained

    def _get_point_logits(self, point_fine_grained_features, point_coords, coarse_mask):
        coarse_features = point_sample(coarse_mask, point_coords, align_corners=False)
        return self.point_head(point_fine_grained_features, coarse_features)

    def _subdivision_inference(self, features, mask_representations, instances):
        """The point head on a regular grid of init_resolution, then subdivision_steps times:
        the mask upsampled 2x (bilinear) and its subdivision_num_points most uncertain cells
        recomputed by the point head. Sets pred_masks through mask_rcnn_inference."""
        assert not self.training
        pred_boxes = [x.pred_boxes for x in instances]
        pred_classes = cat([x.pred_classes for x in instances])
        init_side = self.mask_point_subdivision_init_resolution

        mask_logits = None
        for _ in range(self.mask_point_subdivision_steps + 1):
            if mask_logits is None:
                point_coords = generate_regular_grid_point_coords(
                    pred_classes.size(0), init_side, pred_boxes[0].device)
            else:
                mask_logits = interpolate(mask_logits, scale_factor=2, mode="bilinear",
                                          align_corners=False)
                uncertainty_map = calculate_uncertainty(mask_logits, pred_classes)
                point_indices, point_coords = get_uncertain_point_coords_on_grid(
                    uncertainty_map, self.mask_point_subdivision_num_points)

            fine_grained = self._point_pooler(features, pred_boxes, point_coords)
            point_logits = self._get_point_logits(fine_grained, point_coords,
                                                  mask_representations)

            if mask_logits is None:
                R, C, _ = point_logits.shape
                mask_logits = point_logits.reshape(R, C, init_side, init_side)
                if len(pred_classes) == 0:  # nothing to subdivide
                    mask_rcnn_inference(mask_logits, instances)
                    return instances
            else:
                R, C, H, W = mask_logits.shape
                point_indices = point_indices.unsqueeze(1).expand(-1, C, -1)
                mask_logits = (mask_logits.reshape(R, C, H * W)
                               .scatter_(2, point_indices, point_logits).view(R, C, H, W))
        mask_rcnn_inference(mask_logits, instances)
        return instances


@ROI_MASK_HEAD_REGISTRY.register()
class ImplicitPointRendMaskHead(PointRendMaskHead):
    """Implicit PointRend: a ConvFCHead predicts each box's point-head MLP parameters
    (ImplicitPointHead, always on); trained at uniform random points with an L2 penalty
    (IMPLICIT_POINTREND.PARAMS_L2_REGULARIZER) on the parameters."""

    def __init__(self, cfg, input_shape: Dict[str, ShapeSpec]):
        super().__init__(cfg, input_shape)

    def _init_roi_head(self, cfg, input_shape):
        assert hasattr(self, "num_params"), "the point head is built before the parameter head"
        self.parameter_head = ConvFCHead(cfg, input_shape, output_shape=(self.num_params,))
        self.regularizer = cfg.MODEL.IMPLICIT_POINTREND.PARAMS_L2_REGULARIZER

    def _init_point_head(self, cfg, input_shape):
        self.mask_point_on = True
        point = cfg.MODEL.POINT_HEAD
        self.point_head = build_point_head_over_features(cfg, input_shape,
                                                         "ImplicitPointRendMaskHead", "ROI_HEADS")
        self.mask_point_in_features = point.IN_FEATURES
        self.mask_point_train_num_points = point.TRAIN_NUM_POINTS
        self.mask_point_subdivision_steps = point.SUBDIVISION_STEPS
        self.mask_point_subdivision_num_points = point.SUBDIVISION_NUM_POINTS
        self.num_params = self.point_head.num_params
        side = int(math.sqrt(self.mask_point_subdivision_num_points))
        if side * side != self.mask_point_subdivision_num_points:
            raise ValueError("ImplicitPointRendMaskHead: POINT_HEAD.SUBDIVISION_NUM_POINTS "
                             f"({self.mask_point_subdivision_num_points}) must be a square")
        self.mask_point_subdivision_init_resolution = side

    def forward(self, features, instances):
        """Training: {"loss_l2", "loss_mask_point"}; inference: `instances` with pred_masks."""
        if self.training:
            proposal_boxes = [x.proposal_boxes for x in instances]
            parameters = self.parameter_head(self._roi_pooler(features, proposal_boxes))
            losses = {"loss_l2": self.regularizer * (parameters ** 2).mean()}
            point_coords, point_labels = self._uniform_sample_train_points(instances)
            fine_grained = self._point_pooler(features, proposal_boxes, point_coords)
            point_logits = self._get_point_logits(fine_grained, point_coords, parameters)
            losses["loss_mask_point"] = roi_mask_point_loss(point_logits, instances,
                                                            point_labels)
            return losses
        pred_boxes = [x.pred_boxes for x in instances]
        parameters = self.parameter_head(self._roi_pooler(features, pred_boxes))
        return self._subdivision_inference(features, parameters, instances)

    def _uniform_sample_train_points(self, instances):
        """TRAIN_NUM_POINTS uniform random points per proposal and their gt labels."""
        assert self.training
        boxes = Boxes.cat([x.proposal_boxes for x in instances])
        point_coords = torch.rand(len(boxes), self.mask_point_train_num_points, 2,
                                  device=boxes.tensor.device)
        coords_in_image = get_point_coords_wrt_image(boxes.tensor, point_coords)
        return point_coords, sample_point_labels(instances, coords_in_image)

    def _get_point_logits(self, fine_grained_features, point_coords, parameters):
        return self.point_head(fine_grained_features, point_coords, parameters)
