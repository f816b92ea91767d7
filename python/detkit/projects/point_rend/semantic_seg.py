"""PointRendSemSegHead (SEM_SEG_HEADS_REGISTRY): a coarse semantic segmentation head
(POINT_HEAD.COARSE_SEM_SEG_HEAD_NAME) refined at its most uncertain points by a point head.
Needs detkit.modeling's SEM_SEG_HEADS_REGISTRY (added with detkit.projects.deeplab)."""
from typing import Dict

import torch
from torch import nn
from torch.nn import functional as F

from ...layers import ShapeSpec, cat
from ...modeling import SEM_SEG_HEADS_REGISTRY
from .point_features import (get_uncertain_point_coords_on_grid,
                             get_uncertain_point_coords_with_randomness, point_sample)
from .point_head import build_point_head_over_features


def calculate_uncertainty(sem_seg_logits):
    """The second-highest minus the highest class logit at each location: (N, C, ...) ->
    (N, 1, ...), highest (0) where the top two classes tie."""
    top2 = torch.topk(sem_seg_logits, k=2, dim=1)[0]
    return (top2[:, 1] - top2[:, 0]).unsqueeze(1)


@SEM_SEG_HEADS_REGISTRY.register()
class PointRendSemSegHead(nn.Module):
    """The coarse head's logits (its `layers`), trained with its `losses` plus a point cross
    entropy at uncertain points; at inference upsampled 2x SUBDIVISION_STEPS times, the
    SUBDIVISION_NUM_POINTS most uncertain cells recomputed by the point head each time."""

    def __init__(self, cfg, input_shape: Dict[str, ShapeSpec]):
        super().__init__()
        self.ignore_value = cfg.MODEL.SEM_SEG_HEAD.IGNORE_VALUE
        self.coarse_sem_seg_head = SEM_SEG_HEADS_REGISTRY.get(
            cfg.MODEL.POINT_HEAD.COARSE_SEM_SEG_HEAD_NAME)(cfg, input_shape)
        self._init_point_head(cfg, input_shape)

    def _init_point_head(self, cfg, input_shape: Dict[str, ShapeSpec]):
        point = cfg.MODEL.POINT_HEAD
        self.point_head = build_point_head_over_features(cfg, input_shape, "PointRendSemSegHead",
                                                         "SEM_SEG_HEAD")
        self.in_features = point.IN_FEATURES
        self.train_num_points = point.TRAIN_NUM_POINTS
        self.oversample_ratio = point.OVERSAMPLE_RATIO
        self.importance_sample_ratio = point.IMPORTANCE_SAMPLE_RATIO
        self.subdivision_steps = point.SUBDIVISION_STEPS
        self.subdivision_num_points = point.SUBDIVISION_NUM_POINTS

    def _fine_grained(self, features, point_coords):
        return cat([point_sample(features[name], point_coords, align_corners=False)
                    for name in self.in_features], dim=1)

    def forward(self, features, targets=None):
        """Training: (None, losses with "loss_sem_seg_point"); inference: (logits, {})."""
        coarse_logits = self.coarse_sem_seg_head.layers(features)
        if self.training:
            losses = self.coarse_sem_seg_head.losses(coarse_logits, targets)
            with torch.no_grad():
                point_coords = get_uncertain_point_coords_with_randomness(
                    coarse_logits, calculate_uncertainty, self.train_num_points,
                    self.oversample_ratio, self.importance_sample_ratio)
            coarse_features = point_sample(coarse_logits, point_coords, align_corners=False)
            point_logits = self.point_head(self._fine_grained(features, point_coords),
                                           coarse_features)
            point_targets = point_sample(targets.unsqueeze(1).to(torch.float), point_coords,
                                         mode="nearest", align_corners=False)
            point_targets = point_targets.squeeze(1).to(torch.long)
            losses["loss_sem_seg_point"] = F.cross_entropy(
                point_logits, point_targets, reduction="mean", ignore_index=self.ignore_value)
            return None, losses

        logits = coarse_logits.clone()
        for _ in range(self.subdivision_steps):
            logits = F.interpolate(logits, scale_factor=2, mode="bilinear", align_corners=False)
            point_indices, point_coords = get_uncertain_point_coords_on_grid(
                calculate_uncertainty(logits), self.subdivision_num_points)
            coarse_features = point_sample(coarse_logits, point_coords, align_corners=False)
            point_logits = self.point_head(self._fine_grained(features, point_coords),
                                           coarse_features)
            N, C, H, W = logits.shape
            point_indices = point_indices.unsqueeze(1).expand(-1, C, -1)
            logits = logits.reshape(N, C, H * W).scatter_(2, point_indices,
                                                          point_logits).view(N, C, H, W)
        return logits, {}
