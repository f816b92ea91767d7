"""Matcher (Detectron2's detectron2.modeling.matcher): each prediction (column of an M x N
quality matrix, e.g. IoU with M ground truths) gets the ground truth it matches best and a label
from the threshold band its best quality falls in (-1 ignore, 0 negative, 1 positive);
optionally Faster R-CNN's low-quality matches. Plain torch, scriptable, as detkit's C++ matcher
(detkit/modeling/matcher.h)."""
from typing import List, Tuple

import torch

from ..layers import nonzero_tuple

__all__ = ["Matcher"]


class Matcher:
    def __init__(self, thresholds: List[float], labels: List[int],
                 allow_low_quality_matches: bool = False):
        """thresholds [t1, ..., tk] increasing, t1 > 0; labels: k + 1 of {-1, 0, 1}, labels[i] for
        quality in [t_i, t_{i+1}) (t_0 = -inf, t_{k+1} = +inf). allow_low_quality_matches: each
        ground truth's best predictions (ties included) are labelled 1 whatever their quality."""
        if len(thresholds) == 0 or thresholds[0] <= 0:
            raise ValueError("Matcher: thresholds must be non-empty and start above 0")
        bounds = [-float("inf")] + list(thresholds) + [float("inf")]
        for i in range(len(bounds) - 1):
            if bounds[i] > bounds[i + 1]:
                raise ValueError("Matcher: thresholds must be increasing")
        for label in labels:
            if label not in [-1, 0, 1]:
                raise ValueError("Matcher: labels must be -1, 0 or 1")
        if len(labels) != len(bounds) - 1:
            raise ValueError("Matcher: labels needs one more entry than thresholds")
        self.thresholds = bounds
        self.labels = list(labels)
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """match_quality_matrix (M, N), every entry >= 0: matches (N,) int64, the best ground
        truth of each prediction (0 when M = 0), and match_labels (N,) int8."""
        if match_quality_matrix.dim() != 2:
            raise ValueError("Matcher: match_quality_matrix must be (M, N)")
        n = match_quality_matrix.size(1)
        if match_quality_matrix.numel() == 0:
            matches = torch.zeros((n,), dtype=torch.int64, device=match_quality_matrix.device)
            labels = torch.full((n,), self.labels[0], dtype=torch.int8,
                                device=match_quality_matrix.device)
            return matches, labels
        if not bool((match_quality_matrix >= 0).all()):
            raise ValueError("Matcher: match_quality_matrix must not be negative")
        best, matches = match_quality_matrix.max(dim=0)
        match_labels = torch.ones(matches.size(), dtype=torch.int8, device=matches.device)
        for i in range(len(self.labels)):
            band = (best >= self.thresholds[i]) & (best < self.thresholds[i + 1])
            match_labels[band] = self.labels[i]
        if self.allow_low_quality_matches:
            self.set_low_quality_matches_(match_labels, match_quality_matrix)
        return matches, match_labels

    def set_low_quality_matches_(self, match_labels: torch.Tensor,
                                 match_quality_matrix: torch.Tensor):
        """Labels 1 every prediction that is some ground truth's best (Faster R-CNN's RPN rule
        (i)); its match stays its own best ground truth."""
        best_per_gt, _ = match_quality_matrix.max(dim=1)
        _, best_predictions = nonzero_tuple(match_quality_matrix == best_per_gt[:, None])
        match_labels[best_predictions] = 1
