"""ImageList as Detectron2's: images of different sizes padded into one (N, C, H, W) tensor, with
each image's (height, width) kept."""
from typing import Dict, List, Optional, Tuple

from torch import device as Device

import torch
from torch.nn import functional as F


class ImageList:
    def __init__(self, tensor: torch.Tensor, image_sizes: List[Tuple[int, int]]):
        self.tensor = tensor
        self.image_sizes = image_sizes

    def __len__(self) -> int:
        return len(self.image_sizes)

    def __getitem__(self, idx) -> torch.Tensor:
        """Image idx without its padding."""
        height, width = self.image_sizes[idx]
        return self.tensor[idx, ..., :height, :width]

    @torch.jit.unused
    def to(self, *args, **kwargs) -> "ImageList":
        return ImageList(self.tensor.to(*args, **kwargs), self.image_sizes)

    @property
    def device(self) -> Device:
        return self.tensor.device

    @staticmethod
    def from_tensors(tensors: List[torch.Tensor], size_divisibility: int = 0,
                     pad_value: float = 0.0,
                     padding_constraints: Optional[Dict[str, int]] = None) -> "ImageList":
        """Pads each (..., H, W) tensor at the bottom and right to the largest H and W, rounded up
        to a multiple of size_divisibility (padding_constraints may set `size_divisibility`, and
        `square_size` to pad to a square of that side)."""
        if len(tensors) == 0:
            raise ValueError("ImageList.from_tensors needs at least one tensor")
        if not torch.jit.is_scripting():
            if torch.jit.is_tracing():
                return _from_tensors_traced(tensors, size_divisibility, pad_value,
                                            padding_constraints)
        image_sizes: List[Tuple[int, int]] = []
        max_size = [0, 0]
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                raise TypeError("ImageList.from_tensors takes a list of tensors")
            if t.shape[:-2] != tensors[0].shape[:-2]:
                raise ValueError("ImageList.from_tensors: tensors of shapes " + str(t.shape) +
                                 " and " + str(tensors[0].shape) +
                                 " differ before their last two sides")
            image_sizes.append((int(t.shape[-2]), int(t.shape[-1])))
            max_size = [max(max_size[0], int(t.shape[-2])), max(max_size[1], int(t.shape[-1]))]
        if padding_constraints is not None:
            square = int(padding_constraints.get("square_size", 0))
            if square > 0:
                max_size = [square, square]
            if "size_divisibility" in padding_constraints:
                size_divisibility = padding_constraints["size_divisibility"]
        if size_divisibility > 1:
            stride = size_divisibility
            max_size = [(max_size[0] + stride - 1) // stride * stride,
                        (max_size[1] + stride - 1) // stride * stride]
        if len(tensors) == 1:
            height, width = image_sizes[0]
            padding = [0, max_size[1] - width, 0, max_size[0] - height]
            batched = F.pad(tensors[0], padding, value=pad_value).unsqueeze_(0)
        else:
            shape = [len(tensors)] + list(tensors[0].shape[:-2]) + max_size
            batched = tensors[0].new_full(shape, pad_value)
            for i, image in enumerate(tensors):
                batched[i, ..., :image.shape[-2], :image.shape[-1]].copy_(image)
        return ImageList(batched.contiguous(), image_sizes)


def _from_tensors_traced(tensors, size_divisibility, pad_value, padding_constraints):
    """from_tensors under torch.jit.trace: the sizes as traced tensors (sizes read off a tensor
    are tensors while tracing), so that the trace pads inputs of other sizes correctly; the
    image sizes are returned as (2,) tensors."""
    from ..layers.wrappers import shapes_to_tensor
    sizes = [shapes_to_tensor([t.shape[-2], t.shape[-1]]) for t in tensors]
    max_size = torch.stack(sizes).max(0).values
    if padding_constraints is not None:
        square = int(padding_constraints.get("square_size", 0))
        if square > 0:
            max_size = torch.tensor([square, square])
        size_divisibility = padding_constraints.get("size_divisibility", size_divisibility)
    if size_divisibility > 1:
        stride = size_divisibility
        max_size = (max_size + (stride - 1)).div(stride, rounding_mode="floor") * stride
    if len(tensors) == 1:
        padding = [0, max_size[-1] - sizes[0][1], 0, max_size[-2] - sizes[0][0]]
        batched = F.pad(tensors[0], padding, value=pad_value).unsqueeze_(0)
    else:
        shape = [len(tensors)] + list(tensors[0].shape[:-2]) + [max_size[0], max_size[1]]
        batched = tensors[0].new_full(shape, pad_value)
        for i, image in enumerate(tensors):
            batched[i, ..., :image.shape[-2], :image.shape[-1]].copy_(image)
    return ImageList(batched.contiguous(), sizes)
