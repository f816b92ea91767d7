"""detkit.utils.analysis: parameter_count against a per-prefix sum of numel; FLOPs of detkit's
Faster R-CNN R-50-FPN on an 800 x 800 image against Detectron2's own figure for it (its
tests/test_model_analysis.py: 117 GFLOPs of convolutions, fvcore's count); FLOPs of a plain
nn.Module against the convolution and linear formulas; find_unused_parameters; the errors.
Usage: test_analysis.py [SHARED SOURCE DETKIT] (unused)."""
from collections import defaultdict

import torch
from torch import nn

from checks import check, finish, raises
from detkit.utils.analysis import (FlopCountAnalysis, find_unused_parameters,
                                   flop_count_operators, parameter_count, parameter_count_table)
from detkit.utils.testing import get_model_no_weights

model = get_model_no_weights("COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml")
counts = parameter_count(model)
expected = defaultdict(int)
for name, p in model.named_parameters():
    expected[""] += p.numel()
    expected[name.split(".")[0]] += p.numel()
check(counts[""] == expected[""] == 41699936 and counts["backbone"] == expected["backbone"],
      f"parameter_count: {counts['']} in all (Detectron2's 41699936), backbone "
      f"{counts['backbone']}")
check("backbone" in parameter_count_table(model, max_depth=1), "parameter_count_table")

flops = flop_count_operators(model, [{"image": torch.rand(3, 800, 800), "height": 700,
                                      "width": 700}])
check(int(flops["conv"]) == 117, f"Faster R-CNN R-50-FPN at 800 x 800: {flops['conv']:.3f} "
      f"GFLOPs of convolutions (Detectron2: 117)")
analysis = FlopCountAnalysis(model, [{"image": torch.rand(3, 256, 256)}])
check(analysis.total() == sum(analysis.by_operator().values()) and
      analysis.total("backbone") <= analysis.total(), "by module, by operator and total agree")
check(model.training, "the model is back in training mode")

plain = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = plain
        self.unused = nn.Linear(2, 2)

    def forward(self, batched_inputs):
        return self.net(torch.stack([d["image"] for d in batched_inputs])).sum()


ops = FlopCountAnalysis(Plain(), [{"image": torch.rand(3, 16, 16)}]).by_operator()
conv = 8 * 3 * 3 * 3 * 16 * 16  # multiply-adds: out channels x kernel x output pixels
linear = 8 * 16 * 16 * 10
check(ops.get("conv") == conv and ops.get("linear") == linear,
      f"a plain module: conv {ops.get('conv')} == {conv}, linear {ops.get('linear')} == {linear}")
check(find_unused_parameters(Plain().train(), [{"image": torch.rand(3, 16, 16)}]) ==
      ["unused.weight", "unused.bias"], "find_unused_parameters names the unused layer")
raises(ValueError, lambda: flop_count_operators(model, [{"image": torch.rand(3, 8, 8)}] * 2),
       "batch size 1")
raises(AssertionError, lambda: find_unused_parameters(Plain().eval(), []), "training mode")
finish()
