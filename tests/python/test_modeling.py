"""detkit.modeling from Python: Matcher against a plain per-prediction loop of its rule
(threshold bands, then each ground truth's best predictions labelled 1), on random matrices with
ties; scripted equal to eager; the empty matrix; the errors.
Usage: test_modeling.py [SHARED SOURCE DETKIT] (unused)."""
from typing import List

import torch

from checks import check, finish, raises
from detkit.layers import nonzero_tuple  # noqa: F401  (TorchScript resolves it by name)
from detkit.modeling import Matcher


def reference(quality, thresholds, labels, low_quality):
    m, n = quality.shape
    matches, out = [], []
    for j in range(n):
        column = quality[:, j].tolist()
        best = max(column)
        matches.append(column.index(best))  # the first best, as torch's max
        # thresholds compared in the matrix's float32, as torch compares a tensor with a float
        band = sum(1 for t in thresholds if best >= torch.tensor(t).item())
        out.append(labels[band])
    if low_quality:
        for i in range(m):
            row = quality[i].tolist()
            for j, value in enumerate(row):
                if value == max(row):
                    out[j] = 1
    return torch.tensor(matches), torch.tensor(out, dtype=torch.int8)


def make(thresholds: List[float], labels: List[int], low: bool):
    return Matcher(thresholds, labels, allow_low_quality_matches=low)


scripted_make = torch.jit.script(make)
torch.manual_seed(0)
worst = 0
for trial in range(40):
    m, n = int(torch.randint(1, 6, ())), int(torch.randint(1, 30, ()))
    quality = (torch.rand(m, n) * 10).round() / 10  # ties and values on thresholds on purpose
    for thresholds, labels in (([0.3, 0.7], [0, -1, 1]), ([0.5], [0, 1])):
        for low in (False, True):
            expected = reference(quality, thresholds, labels, low)
            for matcher in (make(thresholds, labels, low), scripted_make(thresholds, labels, low)):
                got = matcher(quality)
                if not (torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
                        and got[1].dtype == torch.int8):
                    worst += 1
check(worst == 0, f"Matcher (eager and scripted) equals the per-prediction loop: {worst} mismatches")
matches, labels = Matcher([0.3, 0.7], [0, -1, 1])(torch.zeros(0, 5))
check(torch.equal(matches, torch.zeros(5, dtype=torch.int64)) and
      torch.equal(labels, torch.zeros(5, dtype=torch.int8)), "no ground truth: labels[0] for all")
raises(ValueError, lambda: Matcher([0.0], [0, 1]), "thresholds")
raises(ValueError, lambda: Matcher([0.7, 0.3], [0, -1, 1]), "increasing")
raises(ValueError, lambda: Matcher([0.3], [0, 2]), "labels")
raises(ValueError, lambda: Matcher([0.3], [0, -1, 1]), "one more")
raises(ValueError, lambda: Matcher([0.3], [0, 1])(torch.tensor([[-0.5]])), "negative")
raises(ValueError, lambda: Matcher([0.3], [0, 1])(torch.rand(3)), "(M, N)")
finish()
