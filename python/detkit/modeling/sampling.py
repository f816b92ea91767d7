"""Detectron2's subsample_labels (detectron2.modeling.sampling): a random, class-balanced choice of
foreground and background indices for the RPN's anchors and the ROI heads' proposals."""
from typing import Tuple

import torch

from ..layers import nonzero_tuple

__all__ = ["subsample_labels"]


def subsample_labels(labels: torch.Tensor, num_samples: int, positive_fraction: float,
                     bg_label: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Indices of at most `num_samples` labels: up to `positive_fraction` of them foreground
    (neither -1, ignored, nor `bg_label`), the rest background (`bg_label`), each drawn at random
    without replacement (torch.randperm, foreground first, on the labels' device), so the same seed
    draws the same samples as Detectron2's."""
    foreground = nonzero_tuple((labels != -1) & (labels != bg_label))[0]
    background = nonzero_tuple(labels == bg_label)[0]
    num_foreground = min(foreground.numel(), int(num_samples * positive_fraction))
    num_background = min(background.numel(), num_samples - num_foreground)
    chosen_fg = torch.randperm(foreground.numel(), device=foreground.device)[:num_foreground]
    chosen_bg = torch.randperm(background.numel(), device=background.device)[:num_background]
    return foreground[chosen_fg], background[chosen_bg]
