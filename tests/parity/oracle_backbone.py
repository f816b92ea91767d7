"""Parity oracle for detkit/modeling/backbone: torchvision's ResNet-50 body and FPN, on tensors
saved by tests/parity/oracle.cpp.

The body is torchvision.models.resnet50 with FrozenBatchNorm2d (stride in the 3x3 conv, as
Detectron2's STRIDE_IN_1X1 False) cut by IntermediateLayerGetter after layer1..layer4; the FPN
is torchvision.ops.FeaturePyramidNetwork with LastLevelMaxPool (outputs '0'..'3' and 'pool').

Usage: python3 oracle_backbone.py IN.pt OUT.pt resnet_fpn
IN.pt holds "x" (N, 3, H, W) and the weights under torchvision's names: "body.<name>" for the
ResNet (conv1, bn1, layerK.i.convJ, layerK.i.bnJ, layerK.0.downsample.{0,1}) and "fpn.<name>"
for the FPN (inner_blocks.i.0, layer_blocks.i.0). Both load with strict=True, so a weight that
is missing or left over is an error. OUT.pt receives res2..res5 and p2..p6.
"""
import sys

import torch
from torchvision.models import resnet50
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.ops import FeaturePyramidNetwork
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool
from torchvision.ops.misc import FrozenBatchNorm2d


def _under(tensors, prefix):
    return {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}


def resnet_fpn(t):
    body = IntermediateLayerGetter(
        resnet50(weights=None, norm_layer=FrozenBatchNorm2d),
        return_layers={"layer1": "0", "layer2": "1", "layer3": "2", "layer4": "3"})
    fpn = FeaturePyramidNetwork([256, 512, 1024, 2048], 256, extra_blocks=LastLevelMaxPool())
    body.load_state_dict(_under(t, "body."), strict=True)
    fpn.load_state_dict(_under(t, "fpn."), strict=True)
    body.eval()
    fpn.eval()
    with torch.no_grad():
        stages = body(t["x"])
        pyramid = fpn(stages)
    out = {f"res{i + 2}": stages[str(i)] for i in range(4)}
    out.update({f"p{i + 2}": pyramid[str(i)] for i in range(4)})
    out["p6"] = pyramid["pool"]
    return out


MODES = {f.__name__: f for f in (resnet_fpn,)}


def main():
    in_path, out_path, mode = sys.argv[1:4]
    torch.set_num_threads(1)
    result = {k: v.contiguous() for k, v in MODES[mode](torch.load(in_path, weights_only=False)).items()}
    torch.save(result, out_path)


if __name__ == "__main__":
    main()
