"""detkit.modeling.backbone from Python: ResNet-FPN, RetinaNet's ResNet-FPN, R-50-DC5 and R-50-C4
backbones load Detectron2's fixture weights with strict names and give its recorded features;
seeded, the ResNet-FPN starts from exactly Detectron2's initial weights (same draws, same key
order); ResNet-18 / 50 / ResNeXt-50 (BN and FrozenBN) equal torchvision's with copied weights,
the classifier too; a zero-offset deformable bottleneck equals the plain one, a random-offset
one torchvision's deform_conv2d; stages not needed are not built, frozen stages hold
FrozenBatchNorm2d; scripted equal to eager; the errors.
Usage: test_backbone.py [SHARED SOURCE DETKIT] (SHARED: the fixtures; the rest unused)."""
import sys

import torch
import torchvision
from torch import nn

from checks import check, finish, raises
from detkit.config import get_cfg
from detkit.layers import FrozenBatchNorm2d, ShapeSpec
from detkit.model_zoo import get_config
from detkit.modeling import BACKBONE_REGISTRY, FPN, ResNet, build_backbone
from detkit.modeling.backbone import (BasicStem, BottleneckBlock, DeformBottleneckBlock,
                                      LastLevelMaxPool, build_resnet_backbone)
from detkit.structures import ImageList

shared = sys.argv[1] if len(sys.argv) > 1 else "/work/shared"
fixtures = f"{shared}/fixtures"
torch.manual_seed(0)


def fixture_backbone(name):
    """The fixture's backbone with its weights loaded strictly, in eval mode, and its config."""
    cfg = get_cfg()
    cfg.merge_from_file(f"{fixtures}/{name}/config.yaml")
    backbone = build_backbone(cfg)
    weights = torch.load(f"{fixtures}/{name}/weights.pth")
    own = {k[len("backbone."):]: v for k, v in weights.items() if k.startswith("backbone.")}
    backbone.load_state_dict(own, strict=True)  # raises on any missing or unexpected name
    return backbone.eval(), cfg


def fixture_batch(name, cfg, backbone):
    """Detectron2's batch: the recorded inputs normalised, padded as the backbone asks."""
    outputs = torch.load(f"{fixtures}/{name}/outputs.pth")
    mean = torch.tensor(cfg.MODEL.PIXEL_MEAN).view(-1, 1, 1)
    std = torch.tensor(cfg.MODEL.PIXEL_STD).view(-1, 1, 1)
    images = [(outputs[f"input_tensor_{i}"].float() - mean) / std for i in range(2)]
    batch = ImageList.from_tensors(images, backbone.size_divisibility,
                                   padding_constraints=backbone.padding_constraints)
    return batch.tensor, outputs


# Detectron2's fixtures: weights load by name, features as recorded (its README: 1e-4)
for name, kind in (("detectron2", "FPN"), ("detectron2_retinanet", "RetinaNet FPN"),
                   ("detectron2_dc5", "R-50-DC5"), ("detectron2_c4", "R-50-C4")):
    backbone, cfg = fixture_backbone(name)
    check(True, f"{kind} ({cfg.MODEL.BACKBONE.NAME}) loads {name}/weights.pth strictly")
    batch, outputs = fixture_batch(name, cfg, backbone)
    if "padded_batch_shape" in outputs:
        check(list(batch.shape) == list(outputs["padded_batch_shape"]),
              f"{kind}: the padded batch has Detectron2's shape {list(batch.shape)}")
    with torch.no_grad():
        features = backbone(batch)
    recorded = {k[len("features_"):]: v for k, v in outputs.items() if k.startswith("features_")}
    check(sorted(features) == sorted(recorded), f"{kind}: features {sorted(recorded)}")
    worst = max((features[k] - v).abs().max().item() for k, v in recorded.items())
    print(f"{kind} features vs Detectron2's: largest difference {worst:.2e}")
    check(worst < 1e-4, f"{kind} features equal Detectron2's")
    if name in ("detectron2", "detectron2_retinanet"):
        scripted = torch.jit.script(backbone)
        with torch.no_grad():
            script_features = scripted(batch)
        worst = max((features[k] - script_features[k]).abs().max().item() for k in features)
        check(worst < 1e-5, f"{kind}: scripted equals eager (largest difference {worst:.1e})")

names = set(fixture_backbone("detectron2_retinanet")[0].state_dict())
check({"top_block.p6.weight", "top_block.p7.bias", "fpn_lateral3.weight", "fpn_output5.bias",
       "bottom_up.stem.conv1.weight", "bottom_up.res2.0.conv1.norm.weight",
       "bottom_up.res2.0.shortcut.weight"} <= names, "Detectron2's parameter names")

# Detectron2's own initialisation: torch.manual_seed(0), then the backbone (built first by
# GeneralizedRCNN) of detectron2_bn_train (plain BN, nothing frozen)
cfg = get_cfg()
cfg.merge_from_file(f"{fixtures}/detectron2_bn_train/config.yaml")
torch.manual_seed(0)
state = build_backbone(cfg).state_dict()
weights = torch.load(f"{fixtures}/detectron2_bn_train/weights.pth")
initial = {k[len("backbone."):]: v for k, v in weights.items() if k.startswith("backbone.")}
check(list(state) == list(initial), f"seeded: Detectron2's {len(initial)} backbone state names "
      "in its order")
check(all(torch.equal(state[k], initial[k]) for k in initial),
      "seeded: exactly Detectron2's initial backbone weights (same draws in the same order)")


def torchvision_names(name):
    """Our state-dict name of torchvision's ResNet parameter `name`."""
    parts = name.split(".")
    if parts[0] in ("conv1", "bn1"):
        return "stem.conv1" + (".norm." if parts[0] == "bn1" else ".") + parts[-1]
    if parts[0] == "fc":
        return "linear." + parts[-1]
    stage, block, layer = f"res{int(parts[0][-1]) + 1}", parts[1], parts[2]
    if layer == "downsample":
        layer = "shortcut" + (".norm" if parts[3] == "1" else "")
    elif layer.startswith("bn"):
        layer = f"conv{layer[2:]}.norm"
    return f"{stage}.{block}.{layer}.{parts[-1]}"


def randomise_bn(model):
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            nn.init.uniform_(module.weight, 0.5, 1.5)
            nn.init.uniform_(module.bias, -0.2, 0.2)
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)


def torchvision_features(model, x):
    x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
    features = {}
    for k in range(1, 5):
        x = getattr(model, f"layer{k}")(x)
        features[f"res{k + 1}"] = x
    features["linear"] = model.fc(torch.flatten(model.avgpool(x), 1))
    return features


# torchvision's ResNets (stride in the 3x3 conv) with copied weights
x = torch.randn(2, 3, 96, 128)
for tv_name, depth, groups, width, res2 in (("resnet18", 18, 1, 64, 64),
                                             ("resnet50", 50, 1, 64, 256),
                                             ("resnext50_32x4d", 50, 32, 4, 256)):
    reference = getattr(torchvision.models, tv_name)(weights=None).eval()
    randomise_bn(reference)
    with torch.no_grad():
        expected = torchvision_features(reference, x)
    copied = {torchvision_names(k): v for k, v in reference.state_dict().items()}
    for norm in ("BN", "FrozenBN"):
        cfg = get_cfg()
        cfg.MODEL.RESNETS.DEPTH, cfg.MODEL.RESNETS.NORM = depth, norm
        cfg.MODEL.RESNETS.NUM_GROUPS, cfg.MODEL.RESNETS.WIDTH_PER_GROUP = groups, width
        cfg.MODEL.RESNETS.RES2_OUT_CHANNELS, cfg.MODEL.RESNETS.STRIDE_IN_1X1 = res2, False
        cfg.MODEL.RESNETS.OUT_FEATURES = ["res2", "res3", "res4", "res5"]
        cfg.MODEL.BACKBONE.FREEZE_AT = 0  # BN stays BatchNorm2d everywhere
        ours = build_resnet_backbone(cfg, ShapeSpec(channels=3)).eval()
        loadable = {k: v for k, v in copied.items() if not k.startswith("linear")
                    and not (norm == "FrozenBN" and k.endswith("num_batches_tracked"))}
        ours.load_state_dict(loadable, strict=True)
        with torch.no_grad():
            got = ours(x)
        worst = max((got[k] - expected[k]).abs().max().item() for k in got)
        print(f"{tv_name} ({norm}) vs torchvision: largest difference {worst:.2e}")
        check(worst < 1e-4, f"{tv_name} with {norm} equals torchvision's, res2..res5")
    strides = {k: s.stride for k, s in ours.output_shape().items()}
    check(strides == {"res2": 4, "res3": 8, "res4": 16, "res5": 32}, f"{tv_name} strides")

# the classifier head: ResNet(num_classes) from make_default_stages, "linear" by default
classifier = ResNet(BasicStem(norm="BN"), ResNet.make_default_stages(50, norm="BN"),
                    num_classes=1000).eval()
reference = torchvision.models.resnet50(weights=None).eval()
randomise_bn(reference)
classifier.load_state_dict({torchvision_names(k): v for k, v in reference.state_dict().items()})
with torch.no_grad():
    logits = classifier(x)
    expected = reference(x)
check(list(logits) == ["linear"], "num_classes: the output is 'linear' by default")
worst = (logits["linear"] - expected).abs().max().item()
print(f"ResNet-50 classifier vs torchvision: largest difference {worst:.2e}")
check(worst < 1e-4, "ResNet(num_classes=1000) equals torchvision's resnet50 logits")

# deformable bottleneck: zero offsets (its initialisation) = plain conv; the modulated mask
# starts at sigmoid(0) = 1/2; random offsets as torchvision's deform_conv2d
for modulated in (False, True):
    torch.manual_seed(1)
    deform = DeformBottleneckBlock(32, 64, bottleneck_channels=16, stride=2, num_groups=2,
                                   norm="BN", deform_modulated=modulated).eval()
    plain = BottleneckBlock(32, 64, bottleneck_channels=16, stride=2, num_groups=2,
                            norm="BN").eval()
    state = {k: v for k, v in deform.state_dict().items() if not k.startswith("conv2_offset")}
    if modulated:
        state["conv2.weight"] = state["conv2.weight"] * 0.5
    plain.load_state_dict(state)
    y = torch.randn(2, 32, 18, 22)
    with torch.no_grad():
        worst = (deform(y) - plain(y)).abs().max().item()
    check(worst < 1e-4, f"zero-offset DeformBottleneckBlock (modulated={modulated}) equals "
          f"BottleneckBlock ({worst:.1e})")
    check(deform.conv2_offset.weight.shape[0] == (27 if modulated else 18),
          "conv2_offset channels: 3 x 9 modulated, 2 x 9 otherwise")
    nn.init.normal_(deform.conv2_offset.weight, std=0.1)
    with torch.no_grad():
        hidden = torch.relu(deform.conv1(y))
        raw = deform.conv2_offset(hidden)
        mask = raw[:, 18:].sigmoid() if modulated else None
        sampled = torchvision.ops.deform_conv2d(hidden, raw[:, :18], deform.conv2.weight,
                                                stride=2, padding=1, mask=mask)
        expected = torch.relu(deform.conv3(torch.relu(deform.conv2.norm(sampled))) +
                              deform.shortcut(y))
        worst = (deform(y) - expected).abs().max().item()
        moved = (deform(y) - plain(y)).abs().max().item()
    check(moved > 1e-2, f"random offsets change the output ({moved:.2f})")
    print(f"DeformBottleneckBlock (modulated={modulated}) vs torchvision: {worst:.2e}")
    check(worst < 1e-4, f"random-offset DeformBottleneckBlock (modulated={modulated}) equals "
          "torchvision's deform_conv2d pipeline")

# stages no requested feature needs are not built; frozen stages
resnet = ResNet(BasicStem(), ResNet.make_default_stages(18), out_features=["res3"])
check(hasattr(resnet, "res3") and not hasattr(resnet, "res4") and not hasattr(resnet, "res5"),
      "out_features ['res3']: res4 and res5 are not built")
cfg = get_cfg()
cfg.MODEL.RESNETS.NORM, cfg.MODEL.BACKBONE.FREEZE_AT = "BN", 2
frozen = build_resnet_backbone(cfg, ShapeSpec(channels=3))
check(isinstance(frozen.stem.conv1.norm, FrozenBatchNorm2d) and
      isinstance(frozen.res2[2].conv3.norm, FrozenBatchNorm2d) and
      isinstance(frozen.res3[0].conv1.norm, nn.BatchNorm2d),
      "FREEZE_AT 2: stem and res2 FrozenBatchNorm2d, res3 BatchNorm2d")
check(not any(p.requires_grad for p in frozen.res2.parameters()) and
      all(p.requires_grad for p in frozen.res3.parameters()),
      "FREEZE_AT 2: no gradients to res2, gradients to res3")

# build_backbone: the registry, input channels from PIXEL_MEAN
check(all(n in BACKBONE_REGISTRY for n in ("build_resnet_backbone", "build_resnet_fpn_backbone",
                                          "build_retinanet_resnet_fpn_backbone")),
      "the three builders are registered")
cfg = get_cfg()
cfg.MODEL.PIXEL_MEAN, cfg.MODEL.PIXEL_STD = [0.0] * 4, [1.0] * 4
check(build_backbone(cfg).stem.conv1.weight.shape[1] == 4,
      "build_backbone: input channels = len(PIXEL_MEAN)")

# scripted equals eager: the default ResNet, the GN ResNet-FPN of the model zoo
cfg = get_cfg()
resnet = build_resnet_backbone(cfg, ShapeSpec(channels=3))
image = torch.rand(2, 3, 100, 100)
eager, scripted = resnet(image), torch.jit.script(resnet)(image)
check(all(torch.allclose(eager[k], scripted[k]) for k in eager),
      f"scripted default ResNet equals eager ({sorted(eager)})")
cfg = get_config("Misc/scratch_mask_rcnn_R_50_FPN_3x_gn.yaml")
fpn = build_backbone(cfg, ShapeSpec(channels=3))
image = torch.rand(2, 3, 128, 128)
eager, scripted = fpn(image), torch.jit.script(fpn)(image)
check(list(eager) == ["p2", "p3", "p4", "p5", "p6"] and
      all(torch.allclose(eager[k], scripted[k], atol=1e-5) for k in eager),
      "scripted GN ResNet-FPN equals eager, p2..p6")
check(fpn.size_divisibility == 32 and fpn.padding_constraints == {"square_size": 0},
      "FPN size_divisibility 32, padding_constraints {'square_size': 0}")

# errors
raises(AssertionError, lambda: ResNet(BasicStem(), ResNet.make_default_stages(18),
                                      out_features=["res6"]), "res6")
raises(KeyError, lambda: ResNet.make_default_stages(42), "42")
cfg = get_cfg()
cfg.MODEL.RESNETS.DEPTH = 42
raises(KeyError, lambda: build_resnet_backbone(cfg, ShapeSpec(channels=3)), "depth 42")
cfg = get_cfg()
cfg.MODEL.RESNETS.RES5_DILATION = 3
raises(AssertionError, lambda: build_resnet_backbone(cfg, ShapeSpec(channels=3)), "cannot be 3")
cfg = get_cfg()
cfg.MODEL.RESNETS.DEPTH = 18
raises(AssertionError, lambda: build_resnet_backbone(cfg, ShapeSpec(channels=3)),
       "RES2_OUT_CHANNELS = 64")
raises(AssertionError, lambda: ResNet.make_stage(BottleneckBlock, 2, in_channels=8,
                                                 out_channels=8, bottleneck_channels=4,
                                                 stride_per_block=[1]), "num_blocks=2")
bottom_up = ResNet(BasicStem(), ResNet.make_default_stages(18),
                   out_features=["res2", "res3", "res5"])
raises(AssertionError, lambda: FPN(bottom_up, ["res2", "res4"], 16), "res4")
raises(AssertionError, lambda: FPN(bottom_up, ["res3", "res5"], 16), "log2 contiguous")
raises(AssertionError, lambda: FPN(bottom_up, ["res2", "res3"], 16, fuse_type="max"), "max")
raises(AssertionError, lambda: FPN(nn.Identity(), ["res2"], 16, top_block=LastLevelMaxPool()),
       "Backbone")
cfg = get_cfg()
cfg.MODEL.BACKBONE.NAME = "build_no_such_backbone"
raises(KeyError, lambda: build_backbone(cfg), "build_no_such_backbone")
finish()
