"""Box regression losses with Detectron2's signatures (detectron2.layers.losses, fvcore's
smooth_l1_loss and giou_loss): boxes XYXY, reduction "none" | "mean" | "sum"."""
import math

import torch

EPS = 1e-7


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def smooth_l1_loss(input, target, beta: float, reduction: str = "none"):
    """0.5 x^2 / beta where |x| < beta, else |x| - 0.5 beta; beta < 1e-5 is the L1 loss."""
    diff = torch.abs(input - target)
    loss = diff if beta < 1e-5 else torch.where(diff < beta, 0.5 * diff * diff / beta,
                                                 diff - 0.5 * beta)
    return _reduce(loss, reduction)


def _overlap(boxes1, boxes2):
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    if not ((x2 >= x1).all() and (y2 >= y1).all()):
        raise ValueError("box loss: a predicted box has x1 < x0 or y1 < y0")
    xi1, yi1 = torch.max(x1, x1g), torch.max(y1, y1g)
    xi2, yi2 = torch.min(x2, x2g), torch.min(y2, y2g)
    inter = torch.where((xi2 > xi1) & (yi2 > yi1), (xi2 - xi1) * (yi2 - yi1),
                        torch.zeros_like(x1))
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter
    iou = inter / (union + EPS)
    enclosing = (torch.min(x1, x1g), torch.min(y1, y1g), torch.max(x2, x2g), torch.max(y2, y2g))
    return iou, union, enclosing


def giou_loss(boxes1, boxes2, reduction: str = "none", eps: float = EPS):
    """1 - GIoU (Rezatofighi et al.)."""
    iou, union, (xc1, yc1, xc2, yc2) = _overlap(boxes1, boxes2)
    area_c = (xc2 - xc1) * (yc2 - yc1)
    return _reduce(1 - (iou - (area_c - union) / (area_c + eps)), reduction)


def _center_distance(boxes1, boxes2, eps):
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    iou, _, (xc1, yc1, xc2, yc2) = _overlap(boxes1, boxes2)
    diagonal = (xc2 - xc1) ** 2 + (yc2 - yc1) ** 2 + eps
    distance = ((x1 + x2) / 2 - (x1g + x2g) / 2) ** 2 + ((y1 + y2) / 2 - (y1g + y2g) / 2) ** 2
    return iou, distance / diagonal


def diou_loss(boxes1, boxes2, reduction: str = "none", eps: float = EPS):
    """1 - IoU + the centers' squared distance over the enclosing box's squared diagonal."""
    iou, penalty = _center_distance(boxes1, boxes2, eps)
    return _reduce(1 - iou + penalty, reduction)


def ciou_loss(boxes1, boxes2, reduction: str = "none", eps: float = EPS):
    """DIoU's loss plus alpha v, v the squared difference of the boxes' aspect angles."""
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    iou, penalty = _center_distance(boxes1, boxes2, eps)
    w, h = x2 - x1, y2 - y1
    wg, hg = x2g - x1g, y2g - y1g
    v = (4 / (math.pi ** 2)) * torch.pow(torch.atan(wg / hg) - torch.atan(w / h), 2)
    with torch.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce(1 - iou + penalty + alpha * v, reduction)
