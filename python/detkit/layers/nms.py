"""Non-maximum suppression: detkit's kernels (torch.ops.detkit.nms / batched_nms). Scriptable."""
import torch


def _check(boxes: torch.Tensor, scores: torch.Tensor):
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise ValueError("nms: boxes must be (N, 4), got " + str(boxes.shape))
    if scores.dim() != 1 or scores.shape[0] != boxes.shape[0]:
        raise ValueError("nms: scores must be (N,) for the N boxes, got " + str(scores.shape) +
                         " for " + str(boxes.shape[0]) + " boxes")


def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Indices of the boxes kept, highest score first (torchvision.ops.nms's contract)."""
    _check(boxes, scores)
    return torch.ops.detkit.nms(boxes, scores, float(iou_threshold))


def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor,
                iou_threshold: float) -> torch.Tensor:
    """NMS within each category of idxs; indices kept, highest score first."""
    _check(boxes, scores)
    if idxs.dim() != 1 or idxs.shape[0] != scores.shape[0]:
        raise ValueError("batched_nms: idxs must be (N,) as scores, got " + str(idxs.shape))
    return torch.ops.detkit.batched_nms(boxes, scores, idxs, float(iou_threshold))
