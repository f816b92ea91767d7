"""Keypoints as Detectron2's (detectron2.structures.keypoints): (N, K, 3) x, y, visibility; the
heatmap encoding is detkit's keypoint head's (C++), the decoding its rule in torch (scriptable
and traceable, as the keypoint head's inference needs)."""
import torch
from torch.nn import functional as F

from .. import _C


class Keypoints:
    def __init__(self, keypoints):
        device = keypoints.device if isinstance(keypoints, torch.Tensor) else torch.device("cpu")
        keypoints = torch.as_tensor(keypoints, dtype=torch.float32, device=device)
        if keypoints.dim() != 3 or keypoints.shape[2] != 3:
            raise ValueError(f"Keypoints needs an (N, K, 3) tensor, got {tuple(keypoints.shape)}")
        self.tensor = keypoints

    def __len__(self) -> int:
        return self.tensor.size(0)

    def to(self, *args, **kwargs) -> "Keypoints":
        return type(self)(self.tensor.to(*args, **kwargs))

    @property
    def device(self) -> torch.device:
        return self.tensor.device

    def to_heatmap(self, boxes: torch.Tensor, heatmap_size: int):
        """For boxes (N, 4): each keypoint's flat cell index y * size + x in a size x size grid
        over its box, and whether it is valid (visible and inside the box)."""
        return _C.keypoints_to_heatmap(self.tensor, boxes, int(heatmap_size))

    def __getitem__(self, item) -> "Keypoints":
        if isinstance(item, int):
            return Keypoints(self.tensor[item].unsqueeze(0))
        return Keypoints(self.tensor[item])

    def __repr__(self) -> str:
        return self.__class__.__name__ + f"(num_instances={len(self.tensor)})"

    @staticmethod
    def cat(keypoints_list) -> "Keypoints":
        if not isinstance(keypoints_list, (list, tuple)) or not keypoints_list:
            raise ValueError("Keypoints.cat takes a non-empty list of Keypoints")
        if not all(isinstance(k, Keypoints) for k in keypoints_list):
            raise TypeError("Keypoints.cat: every item must be a Keypoints")
        return type(keypoints_list[0])(torch.cat([k.tensor for k in keypoints_list], dim=0))


@torch.jit.script_if_tracing
def heatmaps_to_keypoints(maps: torch.Tensor, rois: torch.Tensor) -> torch.Tensor:
    """(R, K, H, W) logits over boxes (R, 4) -> (R, K, 4): x, y, logit, score per keypoint.
    Each box's maps are resized (bicubic) to its size in pixels (rounded up, at least 1); a
    keypoint sits at its resized map's argmax cell, centre c = d + 0.5 scaled back to the box;
    its score is the softmax there, normalised over the H x W cells of the unresized map (the
    rule of detkit's C++ keypoint head and Detectron2's). Scriptable, and scripted under
    tracing (the number of boxes varies)."""
    maps = maps.detach()
    rois = rois.detach()
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    widths_ceil = widths.ceil()
    heights_ceil = heights.ceil()
    width_scale = widths / widths_ceil
    height_scale = heights / heights_ceil
    num_keypoints = maps.shape[1]
    out = maps.new_zeros(rois.shape[0], num_keypoints, 4)
    keypoint_index = torch.arange(num_keypoints, device=maps.device)
    for i in range(maps.shape[0]):
        size = (int(heights_ceil[i]), int(widths_ceil[i]))
        resized = F.interpolate(maps[[i]], size=size, mode="bicubic", align_corners=False)
        resized = resized.reshape(resized.shape[1:])  # (K, h, w); reshape exports to ONNX
        best, position = resized.view(num_keypoints, -1).max(1)
        normaliser = (maps[i] - best.view(num_keypoints, 1, 1)).exp().sum((1, 2))
        w = resized.shape[2]
        x_cell = position % w
        y_cell = (position - x_cell) // w
        out[i, :, 0] = (x_cell.float() + 0.5) * width_scale[i] + rois[i, 0]
        out[i, :, 1] = (y_cell.float() + 0.5) * height_scale[i] + rois[i, 1]
        out[i, :, 2] = resized[keypoint_index, y_cell, x_cell]
        out[i, :, 3] = 1.0 / normaliser  # exp(best - best) / normaliser
    return out
