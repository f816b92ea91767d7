"""Box regression encodings (Detectron2's detectron2.modeling.box_regression), as detkit's C++
heads use them (detkit/modeling/box_regression.h): get_deltas(src, target) encodes target boxes
relative to src boxes; apply_deltas(deltas, boxes) decodes (deltas may hold k boxes per row: (N,
k * 4)). Plain torch: traceable, and scriptable classes as Detectron2's."""
import math
from typing import Tuple

import torch
from torch.nn import functional as F

from ..layers.losses import ciou_loss, diou_loss, giou_loss, smooth_l1_loss

__all__ = ["Box2BoxTransform", "Box2BoxTransformLinear", "Box2BoxTransformRotated"]

# the largest log-scale change decoded: a box grows at most 1000 / 16 times
_DEFAULT_SCALE_CLAMP = math.log(1000.0 / 16)


@torch.jit.script
class Box2BoxTransform:
    """R-CNN's encoding of XYXY boxes: (wx * dx / w, wy * dy / h, ww * log(w' / w),
    wh * log(h' / h)) for the centre shift (dx, dy) and sizes w, h -> w', h'."""

    def __init__(self, weights: Tuple[float, float, float, float],
                 scale_clamp: float = _DEFAULT_SCALE_CLAMP):
        self.weights = weights
        self.scale_clamp = scale_clamp

    def get_deltas(self, src_boxes: torch.Tensor, target_boxes: torch.Tensor) -> torch.Tensor:
        """src_boxes, target_boxes (N, 4) XYXY, src widths and heights > 0: deltas (N, 4)."""
        src_w = src_boxes[:, 2] - src_boxes[:, 0]
        src_h = src_boxes[:, 3] - src_boxes[:, 1]
        if not bool((src_w > 0).all()) or not bool((src_h > 0).all()):
            raise ValueError("Box2BoxTransform.get_deltas: src_boxes need width and height > 0")
        tgt_w = target_boxes[:, 2] - target_boxes[:, 0]
        tgt_h = target_boxes[:, 3] - target_boxes[:, 1]
        shift_x = (target_boxes[:, 0] + 0.5 * tgt_w) - (src_boxes[:, 0] + 0.5 * src_w)
        shift_y = (target_boxes[:, 1] + 0.5 * tgt_h) - (src_boxes[:, 1] + 0.5 * src_h)
        wx, wy, ww, wh = self.weights
        return torch.stack((wx * shift_x / src_w, wy * shift_y / src_h,
                            ww * torch.log(tgt_w / src_w), wh * torch.log(tgt_h / src_h)), dim=1)

    def apply_deltas(self, deltas: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
        """deltas (N, k * 4), boxes (N, 4) XYXY: (N, k * 4) boxes, decoded in float32."""
        deltas = deltas.float()
        boxes = boxes.to(deltas.dtype)
        w = (boxes[:, 2] - boxes[:, 0])[:, None]
        h = (boxes[:, 3] - boxes[:, 1])[:, None]
        cx = boxes[:, 0:1] + 0.5 * w
        cy = boxes[:, 1:2] + 0.5 * h
        wx, wy, ww, wh = self.weights
        new_cx = deltas[:, 0::4] / wx * w + cx
        new_cy = deltas[:, 1::4] / wy * h + cy
        half_w = 0.5 * torch.exp(torch.clamp(deltas[:, 2::4] / ww, max=self.scale_clamp)) * w
        half_h = 0.5 * torch.exp(torch.clamp(deltas[:, 3::4] / wh, max=self.scale_clamp)) * h
        decoded = torch.stack((new_cx - half_w, new_cy - half_h, new_cx + half_w, new_cy + half_h),
                              dim=-1)
        return decoded.reshape(deltas.shape)


@torch.jit.script
class Box2BoxTransformRotated:
    """The same for rotated boxes (cx, cy, w, h, angle in degrees), with the angle change
    wa * (radians, wrapped to [-180, 180) degrees) as a fifth delta."""

    def __init__(self, weights: Tuple[float, float, float, float, float],
                 scale_clamp: float = _DEFAULT_SCALE_CLAMP):
        self.weights = weights
        self.scale_clamp = scale_clamp

    def get_deltas(self, src_boxes: torch.Tensor, target_boxes: torch.Tensor) -> torch.Tensor:
        """src_boxes, target_boxes (N, 5): deltas (N, 5)."""
        if not bool((src_boxes[:, 2] > 0).all()) or not bool((src_boxes[:, 3] > 0).all()):
            raise ValueError("Box2BoxTransformRotated.get_deltas: src_boxes need width and "
                             "height > 0")
        wx, wy, ww, wh, wa = self.weights
        turn = (target_boxes[:, 4] - src_boxes[:, 4] + 180.0) % 360.0 - 180.0
        return torch.stack((
            wx * (target_boxes[:, 0] - src_boxes[:, 0]) / src_boxes[:, 2],
            wy * (target_boxes[:, 1] - src_boxes[:, 1]) / src_boxes[:, 3],
            ww * torch.log(target_boxes[:, 2] / src_boxes[:, 2]),
            wh * torch.log(target_boxes[:, 3] / src_boxes[:, 3]),
            wa * turn * math.pi / 180.0), dim=1)

    def apply_deltas(self, deltas: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
        """deltas (N, k * 5), boxes (N, 5): (N, k * 5) boxes, angles in [-180, 180)."""
        if deltas.shape[1] % 5 != 0 or boxes.shape[1] != 5:
            raise ValueError("Box2BoxTransformRotated.apply_deltas: deltas must be (N, k * 5) and "
                             "boxes (N, 5)")
        boxes = boxes.to(deltas.dtype)
        wx, wy, ww, wh, wa = self.weights
        cx, cy, w, h, angle = (boxes[:, 0:1], boxes[:, 1:2], boxes[:, 2:3], boxes[:, 3:4],
                               boxes[:, 4:5])
        new_angle = deltas[:, 4::5] / wa * 180.0 / math.pi + angle
        decoded = torch.stack((
            deltas[:, 0::5] / wx * w + cx,
            deltas[:, 1::5] / wy * h + cy,
            torch.exp(torch.clamp(deltas[:, 2::5] / ww, max=self.scale_clamp)) * w,
            torch.exp(torch.clamp(deltas[:, 3::5] / wh, max=self.scale_clamp)) * h,
            (new_angle + 180.0) % 360.0 - 180.0), dim=-1)
        return decoded.reshape(deltas.shape)


class Box2BoxTransformLinear:
    """FCOS's encoding: the distances (left, top, right, bottom) from the src box's centre to the
    target's sides, divided by the src box's width / height when normalize_by_size."""

    def __init__(self, normalize_by_size=True):
        self.normalize_by_size = normalize_by_size

    def _sizes(self, boxes):
        w = boxes[:, 2] - boxes[:, 0]
        h = boxes[:, 3] - boxes[:, 1]
        return torch.stack((w, h, w, h), dim=1)

    def get_deltas(self, src_boxes, target_boxes):
        """src_boxes, target_boxes (N, 4) XYXY: (N, 4) distances."""
        cx = 0.5 * (src_boxes[:, 0] + src_boxes[:, 2])
        cy = 0.5 * (src_boxes[:, 1] + src_boxes[:, 3])
        deltas = torch.stack((cx - target_boxes[:, 0], cy - target_boxes[:, 1],
                              target_boxes[:, 2] - cx, target_boxes[:, 3] - cy), dim=1)
        return deltas / self._sizes(src_boxes) if self.normalize_by_size else deltas

    def apply_deltas(self, deltas, boxes):
        """deltas (N, k * 4) (negative distances read as 0), boxes (N, 4): (N, k * 4) boxes."""
        deltas = F.relu(deltas)
        boxes = boxes.to(deltas.dtype)
        if self.normalize_by_size:
            deltas = deltas * self._sizes(boxes).repeat(1, deltas.shape[1] // 4)
        cx = (0.5 * (boxes[:, 0] + boxes[:, 2]))[:, None]
        cy = (0.5 * (boxes[:, 1] + boxes[:, 3]))[:, None]
        decoded = torch.stack((cx - deltas[:, 0::4], cy - deltas[:, 1::4], cx + deltas[:, 2::4],
                               cy + deltas[:, 3::4]), dim=-1)
        return decoded.reshape(deltas.shape)


def _dense_box_regression_loss(anchors, box2box_transform, pred_anchor_deltas, gt_boxes,
                               fg_mask, box_reg_loss_type="smooth_l1", smooth_l1_beta=0.0):
    """Detectron2's box regression loss of dense heads (RPN, RetinaNet), summed over the anchors
    of fg_mask: anchors, one Boxes (or (Ri, 4) tensor) per level; pred_anchor_deltas, one
    (N, Ri, 4) per level; gt_boxes, one (R, 4) matched box per anchor for each of the N images;
    fg_mask (N, R) bool. "smooth_l1" compares the deltas (smooth_l1_beta, 0 for L1); "giou",
    "diou" and "ciou" compare the decoded boxes with the ground truth."""
    if isinstance(anchors[0], torch.Tensor):
        all_anchors = torch.cat(list(anchors), dim=0)
    else:  # Boxes or RotatedBoxes
        all_anchors = type(anchors[0]).cat(list(anchors)).tensor
    deltas = torch.cat(list(pred_anchor_deltas), dim=1)  # (N, R, 4)
    if box_reg_loss_type == "smooth_l1":
        target = torch.stack([box2box_transform.get_deltas(all_anchors, g) for g in gt_boxes])
        return smooth_l1_loss(deltas[fg_mask], target[fg_mask], beta=smooth_l1_beta,
                              reduction="sum")
    box_losses = {"giou": giou_loss, "diou": diou_loss, "ciou": ciou_loss}
    if box_reg_loss_type not in box_losses:
        raise ValueError(f"Invalid dense box regression loss type '{box_reg_loss_type}' "
                         "(smooth_l1, giou, diou or ciou)")
    predicted = torch.stack([box2box_transform.apply_deltas(d, all_anchors) for d in deltas])
    return box_losses[box_reg_loss_type](predicted[fg_mask], torch.stack(list(gt_boxes))[fg_mask],
                                         reduction="sum")
