"""Boxes and the pairwise box measures as Detectron2's (detectron2.structures.boxes); the IoU is
detkit's own kernel (torch.ops.detkit.box_iou, the one its models use)."""
from typing import List, Tuple

from torch import device as Device

import torch


class Boxes:
    """An (N, 4) float32 tensor of XYXY boxes with Detectron2's methods; indexing and `to()`
    behave as on a tensor."""

    def __init__(self, tensor: torch.Tensor):
        if not isinstance(tensor, torch.Tensor):
            tensor = torch.as_tensor(tensor, dtype=torch.float32, device=torch.device("cpu"))
        else:
            tensor = tensor.to(torch.float32)
        if tensor.numel() == 0:
            tensor = tensor.reshape((-1, 4)).to(dtype=torch.float32)
        if tensor.dim() != 2 or tensor.size(-1) != 4:
            raise ValueError("Boxes needs an (N, 4) tensor, got shape " + str(tensor.shape))
        self.tensor = tensor

    def clone(self) -> "Boxes":
        return Boxes(self.tensor.clone())

    def to(self, device: Device) -> "Boxes":
        return Boxes(self.tensor.to(device=device))

    def area(self) -> torch.Tensor:
        box = self.tensor
        return (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])

    def clip(self, box_size: Tuple[int, int]) -> None:
        """Clips in place to x in [0, width], y in [0, height]; box_size is (height, width)."""
        if not torch.isfinite(self.tensor).all():
            raise ValueError("Boxes.clip: the boxes hold an infinite or NaN value")
        height, width = box_size
        t = self.tensor
        self.tensor = torch.stack([t[:, 0].clamp(min=0, max=width), t[:, 1].clamp(min=0, max=height),
                                   t[:, 2].clamp(min=0, max=width), t[:, 3].clamp(min=0, max=height)],
                                  dim=-1)

    def nonempty(self, threshold: float = 0.0) -> torch.Tensor:
        box = self.tensor
        return ((box[:, 2] - box[:, 0]) > threshold) & ((box[:, 3] - box[:, 1]) > threshold)

    def inside_box(self, box_size: Tuple[int, int], boundary_threshold: int = 0) -> torch.Tensor:
        height, width = box_size
        t = self.tensor
        return ((t[..., 0] >= -boundary_threshold) & (t[..., 1] >= -boundary_threshold) &
                (t[..., 2] < width + boundary_threshold) &
                (t[..., 3] < height + boundary_threshold))

    def get_centers(self) -> torch.Tensor:
        return (self.tensor[:, :2] + self.tensor[:, 2:]) / 2

    def scale(self, scale_x: float, scale_y: float) -> None:
        self.tensor[:, 0::2] *= scale_x
        self.tensor[:, 1::2] *= scale_y

    @classmethod
    def cat(cls, boxes_list: List["Boxes"]) -> "Boxes":
        if not isinstance(boxes_list, (list, tuple)):
            raise TypeError("Boxes.cat takes a list of Boxes")
        if len(boxes_list) == 0:
            return cls(torch.empty(0))
        for b in boxes_list:
            if not isinstance(b, Boxes):
                raise TypeError("Boxes.cat: every item must be a Boxes")
        return cls(torch.cat([b.tensor for b in boxes_list], dim=0))

    def __getitem__(self, item) -> "Boxes":
        """An int gives a Boxes of one box; a slice, a bool mask or an index tensor, a Boxes."""
        if isinstance(item, int):
            return Boxes(self.tensor[item].view(1, -1))
        selected = self.tensor[item]
        if selected.dim() != 2:
            raise IndexError("indexing Boxes did not give an (N, 4) matrix")
        return Boxes(selected)

    def __len__(self) -> int:
        return self.tensor.shape[0]

    @torch.jit.unused
    def __iter__(self):
        yield from self.tensor

    def __repr__(self) -> str:
        return "Boxes(" + str(self.tensor) + ")"

    @property
    def device(self) -> Device:
        return self.tensor.device


def pairwise_intersection(boxes1: Boxes, boxes2: Boxes) -> torch.Tensor:
    """(N, M) intersection areas."""
    a, b = boxes1.tensor, boxes2.tensor
    sides = torch.min(a[:, None, 2:], b[:, 2:]) - torch.max(a[:, None, :2], b[:, :2])
    return sides.clamp(min=0).prod(dim=2)


def pairwise_iou(boxes1: Boxes, boxes2: Boxes) -> torch.Tensor:
    """(N, M) IoU, 0 where boxes do not overlap; detkit's box_iou kernel on float32 CPU boxes
    (no gradient), the same formula on torch otherwise."""
    a, b = boxes1.tensor, boxes2.tensor
    if a.device.type == "cpu" and b.device.type == "cpu" and not (
            a.requires_grad or b.requires_grad):
        return torch.ops.detkit.box_iou(a.contiguous(), b.contiguous())
    inter = pairwise_intersection(boxes1, boxes2)
    union = boxes1.area()[:, None] + boxes2.area() - inter
    return torch.where(inter > 0, inter / union, torch.zeros(1, dtype=inter.dtype,
                                                             device=inter.device))


def pairwise_ioa(boxes1: Boxes, boxes2: Boxes) -> torch.Tensor:
    """(N, M) intersection over the area of boxes2's box, 0 where they do not overlap."""
    inter = pairwise_intersection(boxes1, boxes2)
    return torch.where(inter > 0, inter / boxes2.area(),
                       torch.zeros(1, dtype=inter.dtype, device=inter.device))


def matched_pairwise_iou(boxes1: Boxes, boxes2: Boxes) -> torch.Tensor:
    """IoU of box i of boxes1 with box i of boxes2 (N each)."""
    if len(boxes1) != len(boxes2):
        raise ValueError(f"matched_pairwise_iou needs as many boxes on each side, got "
                         f"{len(boxes1)} and {len(boxes2)}")
    a, b = boxes1.tensor, boxes2.tensor
    sides = (torch.min(a[:, 2:], b[:, 2:]) - torch.max(a[:, :2], b[:, :2])).clamp(min=0)
    inter = sides[:, 0] * sides[:, 1]
    return inter / (boxes1.area() + boxes2.area() - inter)


def pairwise_point_box_distance(points: torch.Tensor, boxes: Boxes) -> torch.Tensor:
    """(N, M, 4): the distances from each point to each box's left, top, right, bottom sides."""
    x, y = points.unsqueeze(dim=2).unbind(dim=1)  # (N, 1) each
    x0, y0, x1, y1 = boxes.tensor.unsqueeze(dim=0).unbind(dim=2)  # (1, M) each
    return torch.stack([x - x0, y - y0, x1 - x, y1 - y], dim=2)
