"""detkit.projects.deeplab (Detectron2's DeepLab project) from Python: add_deeplab_config's keys
and defaults; WarmupPolyLR's LR at every iteration against its closed form (linear and constant
warm-up, constant ending) and build_lr_scheduler; DeepLabCE against a hand cross-entropy loop
with class and pixel weights and top-k hard pixels; the DeepLab ResNet's shapes, strides and
block dilations; DeepLabV3Head / DeepLabV3PlusHead output shapes and losses against
torch's cross-entropy of the upsampled logits. The errors.
Usage: test_deeplab.py [SHARED SOURCE DETKIT] (unused)."""
import math

import torch
from torch.nn import functional as F

from checks import check, finish, raises
from detkit import Error
from detkit.config import get_cfg
from detkit.layers import ShapeSpec
from detkit.modeling import BACKBONE_REGISTRY, SEM_SEG_HEADS_REGISTRY, build_backbone
from detkit.modeling import build_sem_seg_head
from detkit.projects.deeplab import (DeepLabCE, DeepLabStem, DeepLabV3Head, DeepLabV3PlusHead,
                                     WarmupPolyLR, add_deeplab_config, build_lr_scheduler,
                                     build_resnet_deeplab_backbone)
from detkit.solver import LRMultiplier

torch.manual_seed(0)


def deeplab_cfg():
    cfg = get_cfg()
    add_deeplab_config(cfg)
    return cfg


# add_deeplab_config: Detectron2's keys at its defaults; a frozen config refuses them
cfg = deeplab_cfg()
expected = {"INPUT.CROP.SINGLE_CATEGORY_MAX_AREA": 1.0, "SOLVER.POLY_LR_POWER": 0.9,
            "SOLVER.POLY_LR_CONSTANT_ENDING": 0.0,
            "MODEL.SEM_SEG_HEAD.LOSS_TYPE": "hard_pixel_mining",
            "MODEL.SEM_SEG_HEAD.PROJECT_FEATURES": ["res2"],
            "MODEL.SEM_SEG_HEAD.PROJECT_CHANNELS": [48], "MODEL.SEM_SEG_HEAD.ASPP_CHANNELS": 256,
            "MODEL.SEM_SEG_HEAD.ASPP_DILATIONS": [6, 12, 18],
            "MODEL.SEM_SEG_HEAD.ASPP_DROPOUT": 0.1,
            "MODEL.SEM_SEG_HEAD.USE_DEPTHWISE_SEPARABLE_CONV": False,
            "MODEL.RESNETS.RES4_DILATION": 1, "MODEL.RESNETS.RES5_MULTI_GRID": [1, 2, 4],
            "MODEL.RESNETS.STEM_TYPE": "deeplab"}


def read(cfg, key):
    node = cfg
    for name in key.split("."):
        node = getattr(node, name)
    return node


wrong = [k for k, v in expected.items()
         if (list(read(cfg, k)) if isinstance(v, list) else read(cfg, k)) != v]
check(not wrong, f"add_deeplab_config's keys and defaults (wrong: {wrong})")
cfg.MODEL.RESNETS.RES4_DILATION = 2
cfg.SOLVER.POLY_LR_POWER = 1.5
add_deeplab_config(cfg)
check(cfg.MODEL.RESNETS.RES4_DILATION == 1 and cfg.SOLVER.POLY_LR_POWER == 0.9,
      "add_deeplab_config again resets its keys to their defaults")
check(cfg.MODEL.RESNETS.RES5_DILATION == 1 and cfg.MODEL.SEM_SEG_HEAD.NUM_CLASSES == 54,
      "add_deeplab_config leaves Detectron2's keys alone")
check(cfg.clone().MODEL.RESNETS.RES4_DILATION == 1, "the added keys survive clone()")
raises(Error, lambda: setattr(cfg.SOLVER, "POLY_LR_POWER", "high"), "POLY_LR_POWER")
raises(Error, lambda: setattr(cfg.MODEL.RESNETS, "RES5_DILATON", 2), "RES5_DILATION")
frozen = get_cfg()
frozen.freeze()
raises(Error, lambda: add_deeplab_config(frozen), "frozen")

# WarmupPolyLR: base * warm-up factor * (1 - it / max) ** power, base * ending once below it


def closed_form(it, base, max_iters, factor, warmup_iters, method, power, ending):
    warm = 1.0
    if it < warmup_iters:
        warm = factor if method == "constant" else factor + (1 - factor) * it / warmup_iters
    poly = (1.0 - it / max_iters) ** power
    if ending > 0 and warm == 1.0 and poly < ending:
        return base * ending
    return base * warm * poly


worst = 0.0
settings = [(100, 0.001, 10, "linear", 0.9, 0.0), (60, 0.1, 7, "constant", 2.0, 0.0),
            (80, 0.01, 5, "linear", 0.9, 0.3), (50, 0.5, 0, "linear", 1.0, 0.0)]
for max_iters, factor, warmup_iters, method, power, ending in settings:
    params = [torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))]
    optimizer = torch.optim.SGD([{"params": [params[0]], "lr": 0.1},
                                 {"params": [params[1]], "lr": 0.02}], lr=0.1, momentum=0.9)
    scheduler = WarmupPolyLR(optimizer, max_iters, warmup_factor=factor,
                             warmup_iters=warmup_iters, warmup_method=method, power=power,
                             constant_ending=ending)
    for it in range(max_iters):
        for group, base in zip(optimizer.param_groups, (0.1, 0.02)):
            want = closed_form(it, base, max_iters, factor, warmup_iters, method, power, ending)
            worst = max(worst, abs(group["lr"] - want))
        optimizer.step()
        scheduler.step()
print(f"WarmupPolyLR vs closed form: largest difference {worst:.2e}")
check(worst < 1e-12, "WarmupPolyLR's LR at every iteration equals its closed form")

cfg = deeplab_cfg()
cfg.SOLVER.LR_SCHEDULER_NAME = "WarmupPolyLR"
cfg.SOLVER.MAX_ITER, cfg.SOLVER.WARMUP_ITERS, cfg.SOLVER.BASE_LR = 40, 4, 0.01
cfg.SOLVER.POLY_LR_POWER, cfg.SOLVER.POLY_LR_CONSTANT_ENDING = 1.2, 0.25
optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
scheduler = build_lr_scheduler(cfg, optimizer)
check(isinstance(scheduler, WarmupPolyLR) and scheduler.max_iters == 40 and
      scheduler.power == 1.2 and scheduler.constant_ending == 0.25 and
      scheduler.warmup_iters == 4 and scheduler.warmup_factor == cfg.SOLVER.WARMUP_FACTOR,
      "build_lr_scheduler builds WarmupPolyLR from cfg.SOLVER")
lrs = []
for _ in range(40):
    lrs.append(optimizer.param_groups[0]["lr"])
    optimizer.step()
    scheduler.step()
check(abs(lrs[-1] - 0.01 * 0.25) < 1e-15 and abs(lrs[4] - 0.01 * 0.9 ** 1.2) < 1e-15,
      "build_lr_scheduler's WarmupPolyLR: poly after the warm-up, then the constant ending")
cfg.SOLVER.LR_SCHEDULER_NAME = "WarmupCosineLR"
check(isinstance(build_lr_scheduler(cfg, optimizer), LRMultiplier),
      "build_lr_scheduler leaves other schedules to detkit.solver")
cfg.SOLVER.LR_SCHEDULER_NAME = "Poly"
raises(ValueError, lambda: build_lr_scheduler(cfg, optimizer), "Poly")

# DeepLabCE against a hand loop: -w[label] * log softmax[label] per pixel (0 when ignored),
# times the pixel weight, the int(k * pixels) largest averaged


def hand_ce(logits, labels, ignore, top_k, class_weight=None, pixel_weight=None):
    losses = []
    n, c, h, w = logits.shape
    for b in range(n):
        for y in range(h):
            for x in range(w):
                label = int(labels[b, y, x])
                if label == ignore:
                    losses.append(0.0)
                    continue
                row = logits[b, :, y, x].double()
                loss = -(row[label] - math.log(row.exp().sum().item())).item()
                if class_weight is not None:
                    loss *= float(class_weight[label])
                if pixel_weight is not None:
                    loss *= float(pixel_weight[b, y, x])
                losses.append(loss)
    losses.sort(reverse=True)
    kept = losses if top_k == 1.0 else losses[:int(top_k * len(losses))]
    return sum(kept) / len(kept)


logits = torch.randn(2, 5, 6, 7) * 3
labels = torch.randint(0, 5, (2, 6, 7))
labels[0, :2] = 255
class_weight = torch.rand(5) + 0.5
pixel_weight = torch.rand(2, 6, 7)
worst = 0.0
for top_k in (1.0, 0.2, 0.5):
    for cw, pw in ((None, None), (class_weight, None), (None, pixel_weight),
                   (class_weight, pixel_weight)):
        got = DeepLabCE(ignore_label=255, top_k_percent_pixels=top_k, weight=cw)(
            logits, labels, pw).item()
        worst = max(worst, abs(got - hand_ce(logits, labels, 255, top_k, cw, pw)))
print(f"DeepLabCE vs hand cross-entropy with top-k: largest difference {worst:.2e}")
check(worst < 1e-5, "DeepLabCE equals the hand cross-entropy over the top-k hardest pixels")

# DeepLab ResNet: stride 4 stem of three 3x3 convs; res4/res5 dilated instead of strided,
# res5's blocks at RES5_DILATION * RES5_MULTI_GRID


def resnet_cfg(res4, res5, stem="deeplab", out=("res2", "res3", "res4", "res5")):
    cfg = deeplab_cfg()
    cfg.MODEL.BACKBONE.NAME = "build_resnet_deeplab_backbone"
    cfg.MODEL.BACKBONE.FREEZE_AT = 0
    cfg.MODEL.RESNETS.NORM = "BN"
    cfg.MODEL.RESNETS.STEM_OUT_CHANNELS = 128 if stem == "deeplab" else 64
    cfg.MODEL.RESNETS.OUT_FEATURES = list(out)
    cfg.MODEL.RESNETS.RES4_DILATION, cfg.MODEL.RESNETS.RES5_DILATION = res4, res5
    cfg.MODEL.RESNETS.STEM_TYPE = stem
    return cfg


check(BACKBONE_REGISTRY.get("build_resnet_deeplab_backbone") is build_resnet_deeplab_backbone,
      "build_resnet_deeplab_backbone registered in BACKBONE_REGISTRY")
image = torch.randn(2, 3, 64, 96)
for res4, res5, strides in ((1, 1, [4, 8, 16, 32]), (1, 2, [4, 8, 16, 16]),
                            (2, 4, [4, 8, 8, 8])):
    backbone = build_backbone(resnet_cfg(res4, res5))
    outputs = backbone(image)
    shapes = backbone.output_shape()
    ok = all(outputs[f].shape == (2, 256 * 2 ** i, 64 // s, 96 // s) and
             shapes[f].stride == s and shapes[f].channels == 256 * 2 ** i
             for i, (f, s) in enumerate(zip(["res2", "res3", "res4", "res5"], strides)))
    dilations = [block.conv2.dilation[0] for block in backbone.res5]
    paddings = [block.conv2.padding[0] for block in backbone.res5]
    res4_dilations = {block.conv2.dilation[0] for block in backbone.res4}
    check(ok and dilations == [res5, 2 * res5, 4 * res5] and paddings == dilations and
          res4_dilations == {res4}, f"DeepLab ResNet res4 x{res4} res5 x{res5}: strides "
          f"{strides}, res5 dilations {dilations}")
stem = backbone.stem
check(isinstance(stem, DeepLabStem) and stem.stride == 4 and stem.out_channels == 128 and
      [stem.conv1.out_channels, stem.conv2.out_channels, stem.conv3.out_channels] ==
      [64, 64, 128] and stem.conv1.stride == (2, 2) and stem(image).shape == (2, 128, 16, 24),
      "DeepLabStem: three 3x3 convs (stride 2, 1, 1) and a max pool, stride 4")
basic = build_backbone(resnet_cfg(1, 2, stem="basic", out=["res3"]))
check(not isinstance(basic.stem, DeepLabStem) and basic.stem.conv1.kernel_size == (7, 7) and
      not hasattr(basic, "res4") and basic(image)["res3"].shape == (2, 512, 8, 12),
      "STEM_TYPE 'basic': Detectron2's stem; stages past OUT_FEATURES not built")
frozen_cfg = resnet_cfg(1, 1, out=["res3"])
frozen_cfg.MODEL.BACKBONE.FREEZE_AT = 2
frozen_backbone = build_backbone(frozen_cfg)
check(not any(p.requires_grad for p in frozen_backbone.stem.parameters()) and
      not any(p.requires_grad for p in frozen_backbone.res2.parameters()) and
      all(p.requires_grad for p in frozen_backbone.res3.parameters()),
      "FREEZE_AT 2 freezes the DeepLab stem and res2")
raises(ValueError, lambda: build_backbone(resnet_cfg(1, 1, stem="wide")), "wide")
raises(AssertionError, lambda: build_backbone(resnet_cfg(2, 2)), "res5_dilation")
raises(AssertionError, lambda: build_backbone(resnet_cfg(3, 4)), "res4_dilation cannot be 3")
raises(AssertionError, lambda: build_backbone(resnet_cfg(1, 3)), "res5_dilation cannot be 3")

# heads: logits at stride common_stride, upsampled by it; the loss is the chosen cross-entropy
# of the upsampled logits against the targets


def head_cfg(name, features, loss_type, **head_keys):
    cfg = deeplab_cfg()
    head = cfg.MODEL.SEM_SEG_HEAD
    head.NAME, head.IN_FEATURES, head.LOSS_TYPE = name, list(features), loss_type
    head.NUM_CLASSES, head.IGNORE_VALUE, head.NORM, head.ASPP_DROPOUT = 6, 255, "", 0.0
    head.LOSS_WEIGHT, head.ASPP_CHANNELS, head.CONVS_DIM = 0.7, 32, 32
    head.PROJECT_CHANNELS = [8] * (len(features) - 1)
    for key, value in head_keys.items():
        setattr(head, key, value)
    return cfg


def oracle_loss(logits, targets, stride, loss_type):
    up = F.interpolate(logits, scale_factor=stride, mode="bilinear", align_corners=False)
    pixels = F.cross_entropy(up, targets, ignore_index=255, reduction="none").flatten()
    if loss_type == "cross_entropy":
        return pixels.sum() / (targets != 255).sum()
    return pixels.sort(descending=True).values[:int(0.2 * pixels.numel())].mean()


shapes = {"res2": ShapeSpec(channels=24, stride=4), "res3": ShapeSpec(channels=20, stride=8),
          "res5": ShapeSpec(channels=40, stride=16)}
features = {"res2": torch.randn(2, 24, 16, 24), "res3": torch.randn(2, 20, 8, 12),
            "res5": torch.randn(2, 40, 4, 6)}
targets = torch.randint(0, 6, (2, 64, 96))
targets[:, :5] = 255
check(SEM_SEG_HEADS_REGISTRY.get("DeepLabV3Head") is DeepLabV3Head and
      SEM_SEG_HEADS_REGISTRY.get("DeepLabV3PlusHead") is DeepLabV3PlusHead,
      "the heads are registered in SEM_SEG_HEADS_REGISTRY")
worst = 0.0
for loss_type in ("cross_entropy", "hard_pixel_mining"):
    cfg = head_cfg("DeepLabV3Head", ["res5"], loss_type, COMMON_STRIDE=16)
    head = build_sem_seg_head(cfg, shapes)
    check(isinstance(head, DeepLabV3Head) and head.predictor.out_channels == 6,
          f"build_sem_seg_head builds DeepLabV3Head ({loss_type})")
    head.eval()
    logits, extra = head(features)
    check(logits.shape == (2, 6, 64, 96) and extra == {}, "DeepLabV3Head inference: logits "
          "upsampled by COMMON_STRIDE to the input size")
    head.train()
    _, losses = head(features, targets)
    want = 0.7 * oracle_loss(head.predictor(head.aspp(features["res5"])), targets, 16, loss_type)
    worst = max(worst, abs(losses["loss_sem_seg"].item() - want.item()))

    cfg = head_cfg("DeepLabV3PlusHead", ["res2", "res3", "res5"], loss_type, COMMON_STRIDE=4)
    cfg.MODEL.SEM_SEG_HEAD.IN_FEATURES = ["res5", "res2", "res3"]  # sorted by stride inside
    head = build_sem_seg_head(cfg, shapes)
    check(head.in_features == ["res2", "res3", "res5"] and
          head.decoder["res2"]["project_conv"].out_channels == 8 and
          head.decoder["res2"]["fuse_conv"][1].out_channels == 32 and
          head.decoder["res5"]["fuse_conv"] is None, "DeepLabV3PlusHead's decoder stages")
    head.eval()
    logits, _ = head(features)
    check(logits.shape == (2, 6, 64, 96), "DeepLabV3PlusHead inference: logits at input size")
    head.train()
    _, losses = head(features, targets)
    want = 0.7 * oracle_loss(head.layers(features), targets, 4, loss_type)
    worst = max(worst, abs(losses["loss_sem_seg"].item() - want.item()))
print(f"heads' losses vs cross-entropy of upsampled logits: largest difference {worst:.2e}")
check(worst < 1e-5, "the heads' losses equal the oracle's (weighted by LOSS_WEIGHT)")

decoder = DeepLabV3PlusHead(shapes, project_channels=[8, 8], aspp_dilations=[1, 2, 3],
                            aspp_dropout=0.0, decoder_channels=[16, 24, 32], common_stride=4,
                            norm="BN", train_size=(64, 96), use_depthwise_separable_conv=True)
out = decoder(features)
check(decoder.decoder_only and not hasattr(decoder, "predictor") and
      out.shape == (2, 16, 16, 24) and decoder.decoder["res5"]["project_conv"].pool_kernel_size
      == (4, 6), "decoder-only DeepLabV3PlusHead (depthwise separable, crop pooling): "
      "decoder features at the finest stride")
cfg = head_cfg("DeepLabV3Head", ["res5"], "cross_entropy", COMMON_STRIDE=16)
cfg.INPUT.CROP.ENABLED, cfg.INPUT.CROP.TYPE, cfg.INPUT.CROP.SIZE = True, "absolute", [64, 96]
cropped = DeepLabV3Head(cfg, shapes).eval()
check(cropped.aspp.pool_kernel_size == (4, 6) and
      all(isinstance(k, int) for k in cropped.aspp.pool_kernel_size) and
      cropped(features)[0].shape == (2, 6, 64, 96),
      "DeepLabV3Head pools over the crop at its stride (INPUT.CROP.SIZE)")
cfg.INPUT.CROP.SIZE = [60, 96]
raises(ValueError, lambda: DeepLabV3Head(cfg, shapes), "divisible")
raises(ValueError, lambda: build_sem_seg_head(
    head_cfg("DeepLabV3Head", ["res5"], "focal", COMMON_STRIDE=16), shapes), "focal")
raises(AssertionError, lambda: build_sem_seg_head(
    head_cfg("DeepLabV3Head", ["res3", "res5"], "cross_entropy"), shapes), "one feature")
raises(AssertionError, lambda: DeepLabV3PlusHead(
    shapes, project_channels=[8], aspp_dilations=[1, 2, 3], aspp_dropout=0.0,
    decoder_channels=[16, 24, 32], common_stride=4, norm="", train_size=None),
    "Expected 2 project_channels")
raises(ValueError, lambda: DeepLabV3PlusHead(
    shapes, project_channels=[8, 8], aspp_dilations=[1, 2, 3], aspp_dropout=0.0,
    decoder_channels=[16, 24, 32], common_stride=4, norm="", train_size=(64, 90)), "divisible")
# PointRendSemSegHead (detkit.projects.point_rend) over DeepLabV3PlusHead as its coarse head: with
# one subdivision step refining every cell, its logits are the point head's at each cell centre,
# and in training it adds the point loss to the coarse head's.
from detkit.projects import point_rend  # noqa: E402
from detkit.projects.point_rend.point_features import point_sample  # noqa: E402

cfg = head_cfg("PointRendSemSegHead", ["res2", "res3", "res5"], "cross_entropy",
               COMMON_STRIDE=4)
point_rend.add_pointrend_config(cfg)
cfg.MODEL.POINT_HEAD.COARSE_SEM_SEG_HEAD_NAME = "DeepLabV3PlusHead"
cfg.MODEL.POINT_HEAD.NUM_CLASSES = 6
cfg.MODEL.POINT_HEAD.IN_FEATURES = ["res2"]
cfg.MODEL.POINT_HEAD.SUBDIVISION_STEPS = 1
cfg.MODEL.POINT_HEAD.SUBDIVISION_NUM_POINTS = 32 * 48  # every cell of the 2x upsampled map
pr_head = build_sem_seg_head(cfg, shapes)
check(isinstance(pr_head, point_rend.PointRendSemSegHead) and
      isinstance(pr_head.coarse_sem_seg_head, DeepLabV3PlusHead),
      "PointRendSemSegHead over DeepLabV3PlusHead")
pr_head.eval()
with torch.no_grad():
    refined, _ = pr_head(features)
    coarse = pr_head.coarse_sem_seg_head.layers(features)
    ys = (torch.arange(32, dtype=torch.float32) + 0.5) / 32
    xs = (torch.arange(48, dtype=torch.float32) + 0.5) / 48
    centres = torch.stack(torch.meshgrid(xs, ys, indexing="xy"), dim=-1).reshape(1, -1, 2)
    centres = centres.expand(2, -1, -1)
    want = pr_head.point_head(point_sample(features["res2"], centres, align_corners=False),
                              point_sample(coarse, centres, align_corners=False))
diff = float((refined.reshape(2, 6, -1) - want).abs().max())
check(refined.shape == (2, 6, 32, 48) and diff < 1e-5,
      f"PointRendSemSegHead inference: every cell the point head's logits at its centre "
      f"(max diff {diff:.3g})")
pr_head.train()
_, pr_losses = pr_head(features, targets)
check(set(pr_losses) == {"loss_sem_seg", "loss_sem_seg_point"} and
      all(torch.isfinite(v) for v in pr_losses.values()),
      f"PointRendSemSegHead training: the coarse and the point losses ({sorted(pr_losses)})")
finish()
