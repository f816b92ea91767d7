"""DeepLabCE: per-pixel cross-entropy averaged over the hardest pixels (TensorFlow DeepLab's
hard pixel mining, DeeperLab)."""
import torch
from torch import nn

__all__ = ["DeepLabCE"]


class DeepLabCE(nn.Module):
    """Cross-entropy of each pixel (ignore_label's pixels count 0, class weights `weight`),
    times optional per-pixel `weights`, averaged over all pixels when top_k_percent_pixels is
    1.0, else over the int(top_k_percent_pixels * pixels) largest losses."""

    def __init__(self, ignore_label=-1, top_k_percent_pixels=1.0, weight=None):
        super().__init__()
        self.top_k_percent_pixels = top_k_percent_pixels
        self.ignore_label = ignore_label
        self.criterion = nn.CrossEntropyLoss(weight=weight, ignore_index=ignore_label,
                                             reduction="none")

    def forward(self, logits, labels, weights=None):
        pixel_losses = self.criterion(logits, labels)
        if weights is not None:
            pixel_losses = pixel_losses * weights
        pixel_losses = pixel_losses.contiguous().view(-1)
        if self.top_k_percent_pixels == 1.0:
            return pixel_losses.mean()
        top_k = int(self.top_k_percent_pixels * pixel_losses.numel())
        hardest, _ = torch.topk(pixel_losses, top_k)
        return hardest.mean()
