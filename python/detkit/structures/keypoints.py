"""Keypoints as Detectron2's (detectron2.structures.keypoints): (N, K, 3) x, y, visibility; the
heatmap encoding and decoding are detkit's keypoint head's (C++)."""
import torch

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


def heatmaps_to_keypoints(maps: torch.Tensor, rois: torch.Tensor) -> torch.Tensor:
    """(R, K, H, W) logits over boxes (R, 4) -> (R, K, 4): x, y, logit, score per keypoint
    (Detectron2's: bicubic resize to the box, argmax, softmax score)."""
    return _C.heatmaps_to_keypoints(maps.detach(), rois.detach())
