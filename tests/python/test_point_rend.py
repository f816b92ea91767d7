"""detkit.projects.point_rend from Python: point_sample against a hand bilinear interpolation
(grid_sample's align_corners=False convention, zeros outside) and against grid_sample itself; the
regular grid against the cell-centre formula; a grid-sampled ROI against detkit's ROIAlign
(Detectron2's equivalence); uncertain points against a hand top-k (on a grid, and replayed from
the same seed with randomness); box-relative points against the box formula; point labels;
StandardPointHead / ImplicitPointHead against hand MLPs; roi_mask_point_loss against a
first-principles BCE; PointRendMaskHead's losses and output shapes, traced equal to eager;
PointRendROIHeads' old-weights renaming; add_pointrend_config's keys; ColorAugSSDTransform.
The errors.
Usage: test_point_rend.py [SHARED SOURCE DETKIT] (unused)."""
import collections
import math
import random

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from checks import check, finish, raises
from detkit.config import get_cfg
from detkit.data.transforms import Transform
from detkit.export import patch_builtin_len
from detkit.layers import ROIAlign, ShapeSpec
from detkit.modeling import build_roi_heads
from detkit.projects import point_rend
from detkit.projects.point_rend.mask_head import calculate_uncertainty
from detkit.projects.point_rend.point_features import (
    generate_regular_grid_point_coords, get_point_coords_wrt_image,
    get_uncertain_point_coords_on_grid, get_uncertain_point_coords_with_randomness,
    point_sample, point_sample_fine_grained_features, sample_point_labels)
from detkit.projects.point_rend.point_head import roi_mask_point_loss
from detkit.structures import BitMasks, Boxes, Instances, PolygonMasks
from detkit.utils.events import EventStorage
from detkit.utils.testing import random_boxes

torch.manual_seed(0)


def bilinear(image, x, y):
    """image (C, H, W) at continuous pixel position (x, y) (pixel centres at integers),
    zero outside: the four neighbours weighted by their distances."""
    C, H, W = image.shape
    x0, y0 = math.floor(x), math.floor(y)
    value = torch.zeros(C, dtype=torch.float64)
    for yi in (y0, y0 + 1):
        for xi in (x0, x0 + 1):
            if 0 <= xi < W and 0 <= yi < H:
                weight = (1 - abs(x - xi)) * (1 - abs(y - yi))
                value += weight * image[:, yi, xi].double()
    return value


def hand_point_sample(features, coords):
    """features (N, C, H, W), coords (N, P, 2) in [0, 1]: (N, C, P) by bilinear()."""
    N, C, H, W = features.shape
    out = torch.zeros(N, C, coords.shape[1], dtype=torch.float64)
    for n in range(N):
        for p in range(coords.shape[1]):
            u, v = coords[n, p].tolist()
            out[n, :, p] = bilinear(features[n], u * W - 0.5, v * H - 0.5)
    return out


# point_sample: 3-d points (some outside the map) and a 4-d grid of points
features = torch.rand(2, 3, 5, 7)
coords = torch.rand(2, 11, 2) * 1.2 - 0.1
sampled = point_sample(features, coords, align_corners=False)
diff = (sampled.double() - hand_point_sample(features, coords)).abs().max().item()
check(sampled.shape == (2, 3, 11) and diff < 1e-5,
      f"point_sample (N, P, 2) against a hand bilinear interpolation: max diff {diff:.2e}")
grid = torch.rand(2, 4, 6, 2)
sampled_grid = point_sample(features, grid, align_corners=False)
diff = (sampled_grid - F.grid_sample(features, 2 * grid - 1, align_corners=False)).abs().max()
check(sampled_grid.shape == (2, 3, 4, 6) and diff.item() == 0,
      f"point_sample (N, Hg, Wg, 2) is grid_sample at 2 * coords - 1: max diff {diff:.2e}")
hand_grid = hand_point_sample(features, grid.view(2, -1, 2)).view(2, 3, 4, 6)
diff = (sampled_grid.double() - hand_grid).abs().max().item()
check(diff < 1e-5, f"point_sample (N, Hg, Wg, 2) against the hand interpolation: {diff:.2e}")
nearest = point_sample(features, coords.clamp(0, 0.999), mode="nearest", align_corners=False)
cols = (coords.clamp(0, 0.999)[..., 0] * 7).floor().long()
rows = (coords.clamp(0, 0.999)[..., 1] * 5).floor().long()
hand = torch.stack([features[n][:, rows[n], cols[n]] for n in range(2)])
check(torch.equal(nearest, hand), "point_sample passes mode='nearest' on to grid_sample")

# the regular grid: cell centres (j + 0.5) / S, row-major, x first
side = 4
regular = generate_regular_grid_point_coords(3, side, torch.device("cpu"))
centres = (torch.arange(side, dtype=torch.float32) + 0.5) / side
expected = torch.stack([centres.repeat(side), centres.repeat_interleave(side)], dim=1)
diff = (regular - expected[None]).abs().max().item()
check(regular.shape == (3, side * side, 2) and diff < 1e-6,
      f"generate_regular_grid_point_coords against (j + 0.5) / S: max diff {diff:.2e}")

# a grid-sampled ROI (sampling_ratio points a bin, averaged) equals ROIAlign(aligned=True)
image_features = torch.rand(1, 4, 30, 40)
boxes = random_boxes(6, max_coord=100)
for scale, output_size, ratio in ((0.25, 7, 2), (0.5, 5, 1), (0.25, 3, 3)):
    R = len(boxes)
    dense = generate_regular_grid_point_coords(R, output_size * ratio, boxes.device)
    in_image = get_point_coords_wrt_image(boxes * scale, dense) / torch.tensor([40.0, 30.0])
    by_points = point_sample(image_features, in_image.unsqueeze(0), align_corners=False)
    by_points = by_points.squeeze(0).permute(1, 0, 2).reshape(
        R, -1, output_size * ratio, output_size * ratio)
    by_points = F.avg_pool2d(by_points, ratio)
    rois = torch.cat([torch.zeros(R, 1), boxes], dim=1)
    by_align = ROIAlign((output_size, output_size), scale, ratio, aligned=True)(
        image_features, rois)
    diff = (by_points - by_align).abs().max().item()
    check(diff < 1e-5, f"grid-sampled ROI (scale {scale}, {output_size}x{output_size}, ratio "
                       f"{ratio}) against detkit's ROIAlign: max diff {diff:.2e}")

# box-relative points in the image: x0 + x (x1 - x0), y0 + y (y1 - y0)
relative = torch.rand(6, 9, 2)
in_image = get_point_coords_wrt_image(boxes, relative)
hand = torch.stack([boxes[:, None, 0] + relative[..., 0] * (boxes[:, None, 2] - boxes[:, None, 0]),
                    boxes[:, None, 1] + relative[..., 1] * (boxes[:, None, 3] - boxes[:, None, 1])],
                   dim=2)
diff = (in_image - hand).abs().max().item()
check(diff < 1e-4, f"get_point_coords_wrt_image against the box formula: max diff {diff:.2e}")

# uncertain points on a grid: the top-k cells and their centres
uncertainty = torch.rand(3, 1, 5, 6)
indices, centres = get_uncertain_point_coords_on_grid(uncertainty, 7)
hand_ok = True
for r in range(3):
    order = sorted(range(30), key=lambda i: -uncertainty[r, 0].view(-1)[i].item())[:7]
    hand_ok &= indices[r].tolist() == order
    for p, i in enumerate(order):
        hand_ok &= abs(centres[r, p, 0].item() - (i % 6 + 0.5) / 6) < 1e-6
        hand_ok &= abs(centres[r, p, 1].item() - (i // 6 + 0.5) / 5) < 1e-6
check(hand_ok, "get_uncertain_point_coords_on_grid against a hand top-k and cell centres")
indices, _ = get_uncertain_point_coords_on_grid(uncertainty, 100)
check(indices.shape == (3, 30), "get_uncertain_point_coords_on_grid keeps at most H * W points")

# uncertain points with randomness, replayed from the same seed
logits = torch.randn(4, 3, 7, 7)
classes = torch.tensor([0, 2, 1, 2])
torch.manual_seed(5)
chosen = get_uncertain_point_coords_with_randomness(
    logits, lambda x: calculate_uncertainty(x, classes), 10, 3, 0.75)
torch.manual_seed(5)
candidates = torch.rand(4, 30, 2)
extra = torch.rand(4, 10 - 7, 2)
ok = chosen.shape == (4, 10, 2)
for r in range(4):
    values = hand_point_sample(logits[r:r + 1, classes[r]:classes[r] + 1], candidates[r:r + 1])
    order = sorted(range(30), key=lambda i: values[0, 0, i].abs().item())[:7]  # most uncertain
    ok &= torch.allclose(chosen[r, :7], candidates[r, order])
    ok &= torch.equal(chosen[r, 7:], extra[r])
check(ok, "get_uncertain_point_coords_with_randomness: the 7 of 30 random points nearest "
          "logit 0 (hand top-k), then 3 fresh random points")
torch.manual_seed(6)
all_random = get_uncertain_point_coords_with_randomness(logits, lambda x: x[:, :1], 5, 1, 0.0)
torch.manual_seed(6)
torch.rand(4, 5, 2)
check(torch.equal(all_random, torch.rand(4, 5, 2)),
      "importance_sample_ratio 0: only uniform random points")
agnostic = calculate_uncertainty(logits[:, :1], classes)
check(torch.equal(agnostic, -logits[:, :1].abs()), "calculate_uncertainty class-agnostic: -|x|")

# point features of two images from two maps, in box-relative points
maps = [torch.rand(2, 3, 16, 20), torch.rand(2, 5, 8, 10)]
scales = [1 / 4, 1 / 8]
image_boxes = [Boxes(random_boxes(3, 60)), Boxes(random_boxes(2, 60))]
points = torch.rand(5, 6, 2)
fine, coords_in_image = point_sample_fine_grained_features(maps, scales, image_boxes, points)
hand_rows = []
all_boxes = torch.cat([b.tensor for b in image_boxes])
for r in range(5):
    image = 0 if r < 3 else 1
    parts = []
    for feature_map, scale in zip(maps, scales):
        h, w = feature_map.shape[-2:]
        pts = get_point_coords_wrt_image(all_boxes[r:r + 1], points[r:r + 1]) * scale
        pts = pts / torch.tensor([w, h], dtype=torch.float32)
        parts.append(hand_point_sample(feature_map[image:image + 1], pts)[0])
    hand_rows.append(torch.cat(parts, dim=0))
diff = (fine.double() - torch.stack(hand_rows)).abs().max().item()
check(fine.shape == (5, 8, 6) and diff < 1e-5,
      f"point_sample_fine_grained_features against per-image, per-map sampling: {diff:.2e}")

# point labels: the gt masks read at pixel centres are the mask values
masks = torch.rand(3, 12, 10) > 0.5
gt = Instances((12, 10), gt_masks=BitMasks(masks))
ys, xs = torch.randint(0, 12, (3, 8)), torch.randint(0, 10, (3, 8))
pixel_points = torch.stack([xs + 0.5, ys + 0.5], dim=2).float()
no_objects = Instances((5, 5), gt_masks=BitMasks(torch.zeros(0, 5, 5, dtype=torch.bool)))
labels = sample_point_labels([gt, no_objects], pixel_points)
hand = torch.stack([masks[r, ys[r], xs[r]] for r in range(3)]).float()
diff = (labels - hand).abs().max().item()
check(labels.shape == (3, 8) and diff < 1e-5,
      f"sample_point_labels at pixel centres: the gt mask values (max diff {diff:.2e})")
polygons = Instances((12, 10), gt_masks=PolygonMasks([[np.array([0, 0, 5, 0, 5, 5.0])]]))
raises(TypeError, lambda: sample_point_labels([polygons], pixel_points[:1]), "bitmask")


def bce(x, y):
    return -(y * torch.log(torch.sigmoid(x)) + (1 - y) * torch.log(1 - torch.sigmoid(x)))


# roi_mask_point_loss: BCE of the gt class's point logits, -1 labels weighted 0
point_logits = torch.randn(5, 3, 9)
point_labels = (torch.rand(5, 9) > 0.5).float()
point_labels[0, :3] = -1
proposals = [Instances((20, 20), gt_classes=torch.tensor([2, 0, 1])),
             Instances((20, 20), gt_classes=torch.tensor([1, 1]))]
gt_classes = torch.tensor([2, 0, 1, 1, 1])
with EventStorage() as storage:
    loss = roi_mask_point_loss(point_logits, proposals, point_labels)
    accuracy = storage.latest()["point/accuracy"][0]
class_logits = point_logits[torch.arange(5), gt_classes]
kept = point_labels != -1
hand = (bce(class_logits, point_labels.clamp(min=0)) * kept).sum() / point_labels.numel()
hand_accuracy = ((class_logits > 0).float() == point_labels)[kept].float().mean().item()
check(abs(loss.item() - hand.item()) < 1e-6 and abs(accuracy - hand_accuracy) < 1e-6,
      f"roi_mask_point_loss against BCE by hand: {loss.item():.6f} vs {hand.item():.6f}, "
      f"accuracy {accuracy:.4f} vs {hand_accuracy:.4f}")
with EventStorage():
    agnostic_loss = roi_mask_point_loss(point_logits[:, :1], proposals, point_labels)
hand = (bce(point_logits[:, 0], point_labels.clamp(min=0)) * kept).sum() / point_labels.numel()
check(abs(agnostic_loss.item() - hand.item()) < 1e-6, "roi_mask_point_loss class-agnostic")
empty_loss = roi_mask_point_loss(point_logits[:0], [], point_labels[:0])
check(empty_loss.item() == 0 and empty_loss.requires_grad is False,
      "roi_mask_point_loss without instances: 0")


def pointrend_cfg(num_classes=3):
    cfg = get_cfg()
    point_rend.add_pointrend_config(cfg)
    cfg.MODEL.ROI_HEADS.NUM_CLASSES = num_classes
    cfg.MODEL.POINT_HEAD.NUM_CLASSES = num_classes
    cfg.MODEL.ROI_HEADS.IN_FEATURES = ["p2", "p3"]
    cfg.MODEL.ROI_MASK_HEAD.NAME = "PointRendMaskHead"
    cfg.MODEL.ROI_MASK_HEAD.POOLER_TYPE = ""
    cfg.MODEL.ROI_MASK_HEAD.POINT_HEAD_ON = True
    cfg.MODEL.POINT_HEAD.FC_DIM = 16
    cfg.MODEL.ROI_MASK_HEAD.FC_DIM = 32
    cfg.MODEL.ROI_MASK_HEAD.CONV_DIM = 8
    return cfg


# add_pointrend_config: the keys and their defaults
cfg = get_cfg()
point_rend.add_pointrend_config(cfg)
check(cfg.MODEL.POINT_HEAD.TRAIN_NUM_POINTS == 196 and cfg.MODEL.POINT_HEAD.NAME ==
      "StandardPointHead" and list(cfg.MODEL.ROI_MASK_HEAD.IN_FEATURES) == ["p2"] and
      cfg.MODEL.IMPLICIT_POINTREND.PARAMS_L2_REGULARIZER == 1e-5 and
      cfg.INPUT.COLOR_AUG_SSD is False and cfg.INPUT.CROP.SINGLE_CATEGORY_MAX_AREA == 1.0,
      "add_pointrend_config adds PointRend's keys with their defaults")

# StandardPointHead against a hand MLP (coarse prediction appended to each layer)
cfg = pointrend_cfg()
head = point_rend.StandardPointHead(cfg, ShapeSpec(channels=6))
fine_in, coarse_in = torch.randn(4, 6, 10), torch.randn(4, 3, 10)
x = torch.cat([fine_in, coarse_in], 1)
for k in range(3):
    layer = getattr(head, f"fc{k + 1}")
    x = torch.relu(torch.einsum("oc,rcp->rop", layer.weight[:, :, 0], x) + layer.bias[:, None])
    x = torch.cat([x, coarse_in], 1)
hand = torch.einsum("oc,rcp->rop", head.predictor.weight[:, :, 0], x)
hand = hand + head.predictor.bias[:, None]
diff = (head(fine_in, coarse_in) - hand).abs().max().item()
check(diff < 1e-5, f"StandardPointHead against a hand MLP: max diff {diff:.2e}")

# ImplicitPointHead: each instance's own MLP from its parameters
cfg.MODEL.POINT_HEAD.NAME = "ImplicitPointHead"
cfg.MODEL.POINT_HEAD.NUM_FC = 1
implicit = point_rend.build_point_head(cfg, ShapeSpec(channels=6))
check(implicit.num_params == (256 + 6) * 16 + 16 + 16 * 3 + 3,
      f"ImplicitPointHead.num_params {implicit.num_params} = weights + biases of 2 layers")
params = torch.randn(2, implicit.num_params) * 0.1
pts = torch.rand(2, 10, 2)
out = implicit(fine_in[:2], pts, params)
ok = out.shape == (2, 3, 10)
gauss = implicit.positional_encoding_gaussian_matrix
for r in range(2):
    proj = 2 * math.pi * ((2 * pts[r] - 1) @ gauss)
    feat = torch.cat([torch.sin(proj), torch.cos(proj), fine_in[r].t()], dim=1)  # (P, 262)
    offset, sizes = 0, [(262, 16), (16, 3)]
    weights = []
    for fan_in, fan_out in sizes:
        weights.append(params[r, offset:offset + fan_in * fan_out].view(fan_out, fan_in))
        offset += fan_in * fan_out
    b1 = params[r, offset:offset + 16]
    b2 = params[r, offset + 16:offset + 19]
    hidden = torch.relu(feat @ weights[0].t() + b1)
    ok &= torch.allclose(out[r].t(), hidden @ weights[1].t() + b2, atol=1e-5)
check(ok, "ImplicitPointHead against each instance's MLP written out")
check(implicit(fine_in[:0], pts[:0], params[:0]).shape == (0, 1, 10),
      "ImplicitPointHead without instances: (0, 1, P)")

# PointRendMaskHead: training losses, inference mask shapes, traced equal to eager
cfg = pointrend_cfg()
shapes = {"p2": ShapeSpec(channels=8, stride=4), "p3": ShapeSpec(channels=8, stride=8)}
mask_head = point_rend.PointRendMaskHead(cfg, shapes)
check(mask_head.mask_point_subdivision_init_resolution == 28 and
      mask_head.mask_point_subdivision_steps == 3,
      "subdivision skips the steps that recompute every cell: 7 -> 28, 5 -> 3 steps")
feats = {"p2": torch.rand(2, 8, 32, 40), "p3": torch.rand(2, 8, 16, 20)}
train = []
for n in (3, 2):
    inst = Instances((128, 160))
    inst.proposal_boxes = Boxes(random_boxes(n, 100))
    inst.gt_classes = torch.randint(0, 3, (n,))
    inst.gt_masks = BitMasks(torch.rand(n, 128, 160) > 0.5)
    train.append(inst)
mask_head.train()
with EventStorage():
    losses = mask_head(feats, train)
check(sorted(losses) == ["loss_mask", "loss_mask_point"] and
      all(v.dim() == 0 and torch.isfinite(v) for v in losses.values()),
      f"PointRendMaskHead training: {sorted(losses)} finite scalars")
mask_head.eval()
detections = []
for n in (4, 0):
    inst = Instances((128, 160))
    inst.pred_boxes = Boxes(random_boxes(n, 100))
    inst.pred_classes = torch.randint(0, 3, (n,))
    detections.append(inst)
with torch.no_grad():
    result = mask_head(feats, detections)
check(result[0].pred_masks.shape == (4, 1, 224, 224) and result[1].pred_masks.shape[0] == 0,
      f"PointRendMaskHead inference: pred_masks {tuple(result[0].pred_masks.shape)} "
      "(28 x 2^3), none for an image without boxes")
check(bool(((result[0].pred_masks >= 0) & (result[0].pred_masks <= 1)).all()),
      "pred_masks are probabilities")


class Wrap(nn.ModuleDict):
    def forward(self, p2, p3, boxes):
        inst = Instances((p2.shape[2] * 4, p2.shape[3] * 4))
        inst.pred_boxes = Boxes(boxes)
        inst.pred_classes = torch.zeros(inst.__len__(), dtype=torch.long)
        return self.head({"p2": p2, "p3": p3}, [inst])[0].pred_masks


def gen_inputs(h, w, n):
    return torch.rand(1, 8, h, w), torch.rand(1, 8, h // 2, w // 2), random_boxes(n, h)


model = Wrap({"head": mask_head}).eval()
with torch.no_grad(), patch_builtin_len():
    traced = torch.jit.trace(model, gen_inputs(60, 44, 6))
    inputs = gen_inputs(30, 36, 9)
    eager, by_trace = model(*inputs), traced(*inputs)
diff = (eager - by_trace).abs().max().item()
check(eager.shape == (9, 1, 224, 224) and diff == 0,
      f"PointRendMaskHead traced on other sizes equals eager: max diff {diff:.2e}")

# ImplicitPointRendMaskHead: L2 and point losses, masks at sqrt(SUBDIVISION_NUM_POINTS) * 2^k
cfg = pointrend_cfg()
cfg.MODEL.ROI_MASK_HEAD.NAME = "ImplicitPointRendMaskHead"
cfg.MODEL.POINT_HEAD.NAME = "ImplicitPointHead"
cfg.MODEL.POINT_HEAD.SUBDIVISION_STEPS = 1
cfg.MODEL.POINT_HEAD.SUBDIVISION_NUM_POINTS = 49
implicit_head = point_rend.ImplicitPointRendMaskHead(cfg, shapes).train()
with EventStorage():
    losses = implicit_head(feats, train)
check(sorted(losses) == ["loss_l2", "loss_mask_point"], f"ImplicitPointRendMaskHead training: "
                                                       f"{sorted(losses)}")
implicit_head.eval()
with torch.no_grad():
    masks_out = implicit_head(feats, detections[:1])[0].pred_masks
check(masks_out.shape == (4, 1, 14, 14), f"ImplicitPointRendMaskHead inference: "
                                         f"{tuple(masks_out.shape)}")
cfg.MODEL.POINT_HEAD.SUBDIVISION_NUM_POINTS = 50
raises(ValueError, lambda: point_rend.ImplicitPointRendMaskHead(cfg, shapes), "square")

cfg = pointrend_cfg()
cfg.MODEL.POINT_HEAD.NUM_CLASSES = 4
raises(ValueError, lambda: point_rend.PointRendMaskHead(cfg, shapes), "NUM_CLASSES")

# PointRendROIHeads: built by name; weights of the old format renamed on load
cfg = pointrend_cfg()
cfg.MODEL.MASK_ON = True
cfg.MODEL.ROI_HEADS.NAME = "PointRendROIHeads"
cfg.MODEL.ROI_BOX_HEAD.NAME = "FastRCNNConvFCHead"
cfg.MODEL.ROI_BOX_HEAD.NUM_FC = 1
cfg.MODEL.ROI_BOX_HEAD.FC_DIM = 16
roi_heads = build_roi_heads(cfg, shapes)
check(isinstance(roi_heads, point_rend.PointRendROIHeads) and
      isinstance(roi_heads.mask_head, point_rend.PointRendMaskHead),
      "build_roi_heads: PointRendROIHeads with a PointRendMaskHead")
old_format = collections.OrderedDict(
    (k.replace("mask_head.point_head", "mask_point_head")
      .replace("mask_head.coarse_head", "mask_coarse_head"), torch.full_like(v, 0.5))
    for k, v in roi_heads.state_dict().items())
old_format._metadata = {"": {"version": 1}}
renamed = build_roi_heads(cfg, shapes)
outcome = renamed.load_state_dict(old_format, strict=True)
check(all(torch.equal(v, torch.full_like(v, 0.5)) for v in renamed.state_dict().values()) and
      not outcome.unexpected_keys and not outcome.missing_keys,
      "PointRendROIHeads loads mask_point_head / mask_coarse_head weights (version 1)")
cfg.MODEL.ROI_MASK_HEAD.NAME = "MaskRCNNConvUpsampleHead"
raises(ValueError, lambda: build_roi_heads(cfg, shapes), "CoarseMaskHead")

# ColorAugSSDTransform: a Transform; coordinates unchanged; brightness as convert() says
aug = point_rend.ColorAugSSDTransform("RGB")
check(isinstance(aug, Transform) and aug.brightness_delta == 32 and aug.is_rgb,
      "ColorAugSSDTransform: a Transform with its parameters")
pts = np.random.rand(5, 2)
check(np.array_equal(aug.apply_coords(pts), pts), "ColorAugSSDTransform leaves coordinates")
img = (np.random.rand(6, 5, 3) * 255).astype(np.uint8)
check(np.array_equal(aug.convert(img, alpha=1.5, beta=-20),
                     np.clip(img.astype(np.float32) * 1.5 - 20, 0, 255).astype(np.uint8)),
      "ColorAugSSDTransform.convert: clip(img * alpha + beta) as uint8")
random.seed(0)
brightened = aug.brightness(img)
random.seed(0)
shift = random.uniform(-32, 32) if random.randrange(2) else 0.0
check(np.array_equal(brightened, aug.convert(img, beta=shift)),
      f"ColorAugSSDTransform.brightness: + uniform(-32, 32) drawn from random ({shift:.2f})")
random.seed(5)
contrasted = aug.contrast(img)
random.seed(5)
factor = random.uniform(0.5, 1.5) if random.randrange(2) else 1.0
check(np.array_equal(contrasted, aug.convert(img, alpha=factor)),
      f"ColorAugSSDTransform.contrast: x uniform(0.5, 1.5) half the time ({factor:.2f})")
try:
    import cv2  # noqa: F401  (saturation and hue need OpenCV, as Detectron2's)
except ImportError:
    print("note  cv2 missing: ColorAugSSDTransform's saturation / hue not run")
else:
    random.seed(3)
    out = aug.apply_image(img.copy())
    check(out.shape == img.shape and out.dtype == np.uint8, "apply_image: a uint8 image")
raises(ValueError, lambda: point_rend.ColorAugSSDTransform("YUV"), "BGR or RGB")
raises(AssertionError, lambda: get_uncertain_point_coords_with_randomness(
    logits, lambda x: x, 5, 0.5, 0.5), "")
finish()
