"""detkit.modeling from Python: Matcher against a plain per-prediction loop of its rule
(threshold bands, then each ground truth's best predictions labelled 1), on random matrices with
ties; scripted equal to eager; the empty matrix. Box2BoxTransform against torchvision's BoxCoder
(encode and decode, k boxes per row, the scale clamp), Box2BoxTransformRotated and
Box2BoxTransformLinear against their formulas by hand. The errors.
Usage: test_modeling.py [SHARED SOURCE DETKIT] (unused)."""
import math
from typing import List

import torch

from checks import check, finish, raises
from detkit.layers import nonzero_tuple  # noqa: F401  (TorchScript resolves it by name)
from detkit.modeling import (Box2BoxTransform, Box2BoxTransformLinear, Box2BoxTransformRotated,
                             Matcher)
from detkit.utils.testing import random_boxes


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
check(worst == 0,
      f"Matcher (eager and scripted) equals the per-prediction loop: {worst} mismatches")
matches, labels = Matcher([0.3, 0.7], [0, -1, 1])(torch.zeros(0, 5))
check(torch.equal(matches, torch.zeros(5, dtype=torch.int64)) and
      torch.equal(labels, torch.zeros(5, dtype=torch.int8)), "no ground truth: labels[0] for all")
raises(ValueError, lambda: Matcher([0.0], [0, 1]), "thresholds")
raises(ValueError, lambda: Matcher([0.7, 0.3], [0, -1, 1]), "increasing")
raises(ValueError, lambda: Matcher([0.3], [0, 2]), "labels")
raises(ValueError, lambda: Matcher([0.3], [0, -1, 1]), "one more")
raises(ValueError, lambda: Matcher([0.3], [0, 1])(torch.tensor([[-0.5]])), "negative")
raises(ValueError, lambda: Matcher([0.3], [0, 1])(torch.rand(3)), "(M, N)")

# Box2BoxTransform against torchvision's BoxCoder (the same R-CNN encoding, written apart)
try:
    from torchvision.models.detection._utils import BoxCoder
except ImportError:
    BoxCoder = None
    print("torchvision not importable: Box2BoxTransform's oracle skipped")
if BoxCoder is not None:
    weights = (10.0, 10.0, 5.0, 5.0)
    ours, coder = Box2BoxTransform(weights), BoxCoder(weights)
    src, dst = random_boxes(50, 300).double() + 1, random_boxes(50, 300).double()
    src[:, 2:] += 1  # width and height > 0
    deltas = ours.get_deltas(src, dst)
    check(torch.allclose(deltas, coder.encode_single(dst, src), rtol=1e-12, atol=1e-12),
          "Box2BoxTransform.get_deltas equals torchvision's BoxCoder.encode_single")
    codes = torch.randn(50, 3 * 4) * 2
    codes[0, 2] = 30.0  # far past the clamp: both clamp at log(1000 / 16)
    decoded = ours.apply_deltas(codes, src)
    reference_boxes = coder.decode_single(codes.reshape(-1, 4), src.float().repeat_interleave(3, 0))
    check(decoded.dtype == torch.float32 and
          torch.allclose(decoded, reference_boxes.reshape(50, 12), rtol=1e-5, atol=1e-3),
          "Box2BoxTransform.apply_deltas (3 boxes a row, clamped) equals BoxCoder.decode_single")
raises(ValueError, lambda: Box2BoxTransform((1.0, 1.0, 1.0, 1.0)).get_deltas(
    torch.tensor([[5.0, 5.0, 5.0, 9.0]]), torch.tensor([[0.0, 0.0, 1.0, 1.0]])), "width")
traced = torch.jit.trace(Box2BoxTransform((5.0, 5.0, 10.0, 10.0)).apply_deltas,
                         (torch.randn(10, 8), random_boxes(10)))
check(traced(torch.randn(3, 8), random_boxes(3)).shape == (3, 8), "apply_deltas traced")

# rotated: (cx, cy, w, h, degrees); by hand for one pair
rotated = Box2BoxTransformRotated((1.0, 2.0, 3.0, 4.0, 0.5))
src = torch.tensor([[10.0, 20.0, 4.0, 8.0, 170.0]])
dst = torch.tensor([[12.0, 16.0, 8.0, 2.0, -170.0]])  # 20 degrees on, across +-180
expected = torch.tensor([[2.0 / 4, 2.0 * -4 / 8, 3.0 * math.log(2.0), 4.0 * math.log(0.25),
                          0.5 * math.radians(20.0)]])
check(torch.allclose(rotated.get_deltas(src, dst), expected, atol=1e-6),
      "Box2BoxTransformRotated.get_deltas by hand (the angle wrapped)")
check(torch.allclose(rotated.apply_deltas(expected, src), dst, atol=1e-4),
      "Box2BoxTransformRotated.apply_deltas gives the target back, angle in [-180, 180)")
raises(ValueError, lambda: rotated.apply_deltas(torch.zeros(1, 4), src), "(N, k * 5)")

# linear (FCOS): distances from the src centre to the target's sides, over the src size
linear = Box2BoxTransformLinear()
src = torch.tensor([[0.0, 0.0, 10.0, 20.0]])
dst = torch.tensor([[-5.0, 4.0, 15.0, 30.0]])
check(torch.allclose(linear.get_deltas(src, dst), torch.tensor([[1.0, 0.3, 1.0, 1.0]])),
      "Box2BoxTransformLinear.get_deltas by hand")
check(torch.allclose(linear.apply_deltas(torch.tensor([[1.0, 0.3, 1.0, 1.0, -1.0, 0.0, 0.0, 0.0]]),
                                         src),
                     torch.tensor([[-5.0, 4.0, 15.0, 30.0, 5.0, 10.0, 5.0, 10.0]])),
      "Box2BoxTransformLinear.apply_deltas, 2 boxes a row, a negative distance read as 0")
finish()
