"""RotatedBoxes as Detectron2's container (detectron2.structures.rotated_boxes): an (N, 5) tensor
of (x_center, y_center, width, height, angle in degrees, counter-clockwise). Only the container
methods are here; rotated IoU, clip and nonempty are not (detkit has no rotated kernels)."""
from typing import List

import torch


class RotatedBoxes:
    def __init__(self, tensor: torch.Tensor):
        if not isinstance(tensor, torch.Tensor):
            tensor = torch.as_tensor(tensor, dtype=torch.float32, device=torch.device("cpu"))
        else:
            tensor = tensor.to(torch.float32)
        if tensor.numel() == 0:
            tensor = tensor.reshape((0, 5)).to(dtype=torch.float32)
        if tensor.dim() != 2 or tensor.size(-1) != 5:
            raise ValueError("RotatedBoxes needs an (N, 5) tensor, got shape " + str(tensor.shape))
        self.tensor = tensor

    def clone(self) -> "RotatedBoxes":
        return RotatedBoxes(self.tensor.clone())

    def to(self, device: torch.device) -> "RotatedBoxes":
        return RotatedBoxes(self.tensor.to(device=device))

    def area(self) -> torch.Tensor:
        return self.tensor[:, 2] * self.tensor[:, 3]

    def get_centers(self) -> torch.Tensor:
        return self.tensor[:, :2]

    def __getitem__(self, item) -> "RotatedBoxes":
        if isinstance(item, int):
            return RotatedBoxes(self.tensor[item].view(1, -1))
        selected = self.tensor[item]
        if selected.dim() != 2:
            raise IndexError("indexing RotatedBoxes did not give an (N, 5) matrix")
        return RotatedBoxes(selected)

    def __len__(self) -> int:
        return self.tensor.shape[0]

    def __repr__(self) -> str:
        return "RotatedBoxes(" + str(self.tensor) + ")"

    @classmethod
    def cat(cls, boxes_list: List["RotatedBoxes"]) -> "RotatedBoxes":
        if not isinstance(boxes_list, (list, tuple)):
            raise TypeError("RotatedBoxes.cat takes a list of RotatedBoxes")
        if len(boxes_list) == 0:
            return cls(torch.empty(0))
        for b in boxes_list:
            if not isinstance(b, RotatedBoxes):
                raise TypeError("RotatedBoxes.cat: every item must be a RotatedBoxes")
        return cls(torch.cat([b.tensor for b in boxes_list], dim=0))

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    @torch.jit.unused
    def __iter__(self):
        yield from self.tensor
