"""detkit's small modeling pieces from Python: DefaultAnchorGenerator against a per-cell formula
loop (scripted equal to eager); ROIPooler against torchvision's roi_align per level, its level
assignment against the FPN formula, scripted equal to eager; ASPP / DepthwiseSeparableConv2d
shapes, CNNBlockBase.freeze; scripting_with_instances on a module reading Instances fields,
scripted equal to eager; pad_masks / scale_boxes against their formulas. The errors.
Usage: test_model_parts.py [SHARED SOURCE DETKIT] (unused)."""
import math

import torch
import torchvision
from torch import nn

from checks import check, finish, raises
from detkit.export import patch_instances, scripting_with_instances
from detkit.layers import ASPP, CNNBlockBase, DepthwiseSeparableConv2d, FrozenBatchNorm2d
from detkit.layers.mask_ops import pad_masks, scale_boxes
from detkit.modeling.anchor_generator import DefaultAnchorGenerator
from detkit.modeling.poolers import ROIPooler, assign_boxes_to_levels
from detkit.structures import Boxes, Instances
from detkit.utils.testing import random_boxes

torch.manual_seed(0)

# anchors: for every cell (row-major), every (size, ratio): centre (x + offset) * stride
sizes, ratios, strides, offset = [[16, 40], [64]], [[0.5, 1.0, 3.0]], [8, 16], 0.25
generator = DefaultAnchorGenerator(sizes=sizes, aspect_ratios=ratios, strides=strides,
                                   offset=offset)
features = [torch.rand(1, 2, 3, 5), torch.rand(1, 2, 2, 1)]
anchors = generator(features)
worst = 0.0
for level, (feature, stride) in enumerate(zip(features, strides)):
    rows = []
    for y in range(feature.shape[2]):
        for x in range(feature.shape[3]):
            cx, cy = (x + offset) * stride, (y + offset) * stride
            for s in sizes[level]:
                for r in ratios[0]:
                    w = math.sqrt(s * s / r)
                    rows.append([cx - w / 2, cy - r * w / 2, cx + w / 2, cy + r * w / 2])
    worst = max(worst, (anchors[level].tensor - torch.tensor(rows)).abs().max().item())
print(f"anchors vs formula loop: largest difference {worst:.2e}")
check(worst < 1e-4, "DefaultAnchorGenerator equals the per-cell formula")
check(generator.num_anchors == [6, 3], "num_anchors per level")
scripted = torch.jit.script(generator)(features)
check(all(torch.equal(a.tensor, b.tensor) for a, b in zip(anchors, scripted)),
      "scripted DefaultAnchorGenerator equals eager")
raises(ValueError, lambda: generator(features[:1]), "feature maps")
raises(ValueError, lambda: DefaultAnchorGenerator(sizes=[[32], [64], [128]], aspect_ratios=[[1]],
                                                  strides=[4, 8]), "2 feature maps")
raises(ValueError, lambda: DefaultAnchorGenerator(sizes=[[32]], aspect_ratios=[[1]],
                                                  strides=[4], offset=1.0), "offset")

# ROIPooler: level k of box = clamp(floor(4 + log2(sqrt(area) / 224)), 2, 3), then
# torchvision's roi_align on that level's map
scales = (1 / 4, 1 / 8)
maps = [torch.randn(2, 3, 40, 48), torch.randn(2, 3, 20, 24)]
boxes = [Boxes(random_boxes(7, 190)), Boxes(random_boxes(5, 190))]
boxes[0].tensor[0] = torch.tensor([0.0, 0.0, 180.0, 170.0])  # a box on level 3
levels = assign_boxes_to_levels(boxes, 2, 3, 224, 4)
areas = torch.cat([b.area() for b in boxes]).tolist()
expected = [min(max(math.floor(4 + math.log2(math.sqrt(a) / 224 + 1e-8)), 2), 3) - 2
            for a in areas]
check(levels.tolist() == expected, "assign_boxes_to_levels equals the FPN formula")
check(0 in expected and 1 in expected, "both levels hold boxes")
worst = 0.0
for kind, aligned in (("ROIAlign", False), ("ROIAlignV2", True)):
    pooler = ROIPooler(7, scales, 2, kind, canonical_box_size=224, canonical_level=4)
    out = pooler(maps, boxes)
    rows = torch.cat([torch.cat([torch.full((len(b), 1), float(i)), b.tensor], 1)
                      for i, b in enumerate(boxes)])
    reference = torch.stack([torchvision.ops.roi_align(
        maps[lv], rows[i:i + 1], 7, scales[lv], 2, aligned)[0] for i, lv in enumerate(expected)])
    worst = max(worst, (out - reference).abs().max().item())
    check(torch.equal(torch.jit.script(pooler)(maps, boxes), out),
          f"scripted ROIPooler ({kind}) equals eager")
print(f"ROIPooler vs torchvision roi_align per level: largest difference {worst:.2e}")
check(worst < 1e-4, "ROIPooler equals torchvision's roi_align on each box's level")
pooler = ROIPooler(7, scales, 2, "ROIAlignV2")
check(pooler([torch.rand(0, 3, 8, 8), torch.rand(0, 3, 4, 4)], []).shape == (0, 3, 7, 7),
      "no images: an empty (0, C, 7, 7)")
raises(ValueError, lambda: ROIPooler(7, (1 / 4, 1 / 16), 0, "ROIAlign"), "pyramid")
raises(ValueError, lambda: ROIPooler(7, scales, 0, "Nope"), "unknown pooler type")
raises(NotImplementedError, lambda: ROIPooler(7, scales, 0, "ROIAlignRotated"), "rotated")
raises(ValueError, lambda: pooler(maps[:1], boxes), "feature maps")
raises(ValueError, lambda: pooler(maps, boxes[:1]), "box lists")

# blocks
aspp = ASPP(4, 6, [1, 2, 3], norm="BN", activation=nn.ReLU())
check(aspp(torch.rand(2, 4, 9, 7)).shape == (2, 6, 9, 7), "ASPP keeps the spatial size")
check(aspp.convs[0].activation is not aspp.convs[1].activation, "ASPP copies the activation")
raises(ValueError, lambda: ASPP(4, 6, [1, 2], norm="", activation=nn.ReLU()), "3 dilations")
pooled = ASPP(4, 6, [1, 2, 3], norm="", activation=nn.ReLU(), pool_kernel_size=(4, 4))
raises(ValueError, lambda: pooled(torch.rand(1, 4, 9, 8)), "divisible")
separable = DepthwiseSeparableConv2d(4, 8, norm1="BN", activation1=nn.ReLU())
check(separable(torch.rand(1, 4, 5, 6)).shape == (1, 8, 5, 6)
      and separable.depthwise.groups == 4 and separable.depthwise.bias is None,
      "DepthwiseSeparableConv2d: depthwise without bias under a norm, then pointwise")


class Block(CNNBlockBase):
    def __init__(self):
        super().__init__(4, 8, 1)
        self.conv = nn.Conv2d(4, 8, 1)
        self.norm = nn.BatchNorm2d(8)


block = Block().freeze()
check(isinstance(block.norm, FrozenBatchNorm2d)
      and not any(p.requires_grad for p in block.parameters()),
      "CNNBlockBase.freeze: no gradients, BatchNorm frozen")

# scripting_with_instances


class ScoreBoxes(nn.Module):
    def forward(self, x: Instances) -> torch.Tensor:
        kept = x[x.scores > 0.5]
        return kept.pred_boxes.tensor.sum(dim=1) * kept.scores + len(x)


model = ScoreBoxes().eval()
scripted = scripting_with_instances(model, {"pred_boxes": Boxes, "scores": torch.Tensor})
inst = Instances((20, 30), pred_boxes=Boxes(random_boxes(6, 20)), scores=torch.rand(6))
eager = model(inst)
with patch_instances({"pred_boxes": Boxes, "scores": torch.Tensor}) as cls:
    got = scripted(cls.from_instances(inst))
print(f"scripting_with_instances: eager vs scripted largest difference "
      f"{(eager - got).abs().max().item():.2e}")
check(torch.equal(eager, got), "scripted module over Instances equals eager")
raises(ValueError, lambda: scripting_with_instances(ScoreBoxes(), {"scores": torch.Tensor}),
       "eval mode")
raises(ValueError, lambda: scripting_with_instances(model.eval(), {"_x": torch.Tensor}),
       "public identifier")

# pad_masks / scale_boxes
masks = torch.rand(3, 5, 5)
padded, scale = pad_masks(masks, 2)
check(padded.shape == (3, 9, 9) and torch.equal(padded[:, 2:7, 2:7], masks)
      and padded.clone().index_fill_(1, torch.arange(2, 7), 0)[:, :, 2:7].abs().max() == 0
      and padded[:, :2].abs().max() == 0 and padded[:, 7:].abs().max() == 0
      and scale == 9 / 5, "pad_masks")
b = torch.tensor([[10.0, 20.0, 30.0, 60.0]])
check(torch.allclose(scale_boxes(b, 1.5), torch.tensor([[5.0, 10.0, 35.0, 70.0]])),
      "scale_boxes about the centre")
finish()
