"""detkit.modeling.proposal_generator from Python: the RPN's losses against a computation from
first principles (anchors by the cell formula, an IoU matrix by hand, labels by the thresholds
and each ground truth's best anchors, the sample replayed with the same seed, the deltas encoded
by hand, smooth L1 / GIoU and binary cross-entropy by hand, normalised by batch size x images,
weighted); its events; the proposals against the deltas decoded by hand, a per-level top-k,
clipping, the small boxes dropped and torchvision's batched_nms; scripted equal to eager;
find_top_rpn_proposals traced on other shapes; add_ground_truth_to_proposals; built from the
config (Detectron2's parameter names and init draws); the errors.
Usage: test_rpn.py [SHARED SOURCE DETKIT] (unused)."""
import math
import warnings

import torch
import torchvision
from torch import nn

from checks import check, finish, raises
from detkit.config import get_cfg
from detkit.export import scripting_with_instances
from detkit.layers import ShapeSpec
from detkit.modeling import (PROPOSAL_GENERATOR_REGISTRY, RPN_HEAD_REGISTRY, Box2BoxTransform,
                             Matcher, build_proposal_generator, build_rpn_head)
from detkit.modeling.anchor_generator import DefaultAnchorGenerator
from detkit.modeling.proposal_generator import RPN, StandardRPNHead
from detkit.modeling.proposal_generator.proposal_utils import (add_ground_truth_to_proposals,
                                                               find_top_rpn_proposals)
from detkit.structures import Boxes, ImageList, Instances
from detkit.utils.events import EventStorage

STRIDES, SIZES, RATIOS = (4, 8), ((8.0, 20.0), (24.0, 40.0)), (0.5, 1.0, 2.0)
MAP_SIZES = ((4, 5), (2, 3))
IMAGE_SIZES = [(15, 19), (13, 20)]
WEIGHTS = (2.0, 1.5, 1.0, 0.5)
SCALE_CLAMP = math.log(1000.0 / 16)


def make_rpn(batch_size_per_image=256, loss_type="smooth_l1", beta=0.0, boundary=-1.0,
             topk=((30, 25), (20, 15)), min_size=0.0, loss_weight=None):
    head = StandardRPNHead(in_channels=6, num_anchors=6, conv_dims=[-1])
    with torch.no_grad():  # larger weights than N(0, 0.01): varied logits and deltas
        for p in head.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    generator = DefaultAnchorGenerator(sizes=[list(s) for s in SIZES],
                                       aspect_ratios=[list(RATIOS)], strides=list(STRIDES))
    return RPN(in_features=["p2", "p3"], head=head, anchor_generator=generator,
               anchor_matcher=Matcher([0.3, 0.7], [0, -1, 1], allow_low_quality_matches=True),
               box2box_transform=Box2BoxTransform(WEIGHTS),
               batch_size_per_image=batch_size_per_image, positive_fraction=0.5,
               pre_nms_topk=(topk[0][0], topk[0][1]), post_nms_topk=(topk[1][0], topk[1][1]),
               nms_thresh=0.6, min_box_size=min_size, anchor_boundary_thresh=boundary,
               loss_weight=loss_weight or {"loss_rpn_cls": 1.5, "loss_rpn_loc": 0.7},
               box_reg_loss_type=loss_type, smooth_l1_beta=beta)


def hand_anchors():
    """[level][anchor] XYXY, anchor index (y * W + x) * A + a, a over (size, ratio)."""
    levels = []
    for (h, w), stride, sizes in zip(MAP_SIZES, STRIDES, SIZES):
        rows = []
        for y in range(h):
            for x in range(w):
                cx, cy = (x + 0.5) * stride, (y + 0.5) * stride
                for s in sizes:
                    for r in RATIOS:
                        aw = math.sqrt(s * s / r)
                        rows.append([cx - aw / 2, cy - r * aw / 2, cx + aw / 2, cy + r * aw / 2])
        levels.append(rows)
    return levels


def hand_predictions(rpn, maps):
    """Per level: logits[n][r] and deltas[n][r] read from the head's (N, A, H, W) and
    (N, A * 4, H, W) outputs at anchor r = (y * W + x) * A + a."""
    logits_out, deltas_out = rpn.rpn_head(maps)
    logits, deltas = [], []
    for lo, de in zip(logits_out, deltas_out):
        n_img, a_num, h, w = lo.shape
        logits.append([[lo[n, a, y, x].item() for y in range(h) for x in range(w)
                        for a in range(a_num)] for n in range(n_img)])
        deltas.append([[[de[n, a * 4 + k, y, x].item() for k in range(4)]
                        for y in range(h) for x in range(w) for a in range(a_num)]
                       for n in range(n_img)])
    return logits, deltas


def iou(a, b):
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(iw, 0.0) * max(ih, 0.0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def encode(anchor, box):
    aw, ah = anchor[2] - anchor[0], anchor[3] - anchor[1]
    bw, bh = box[2] - box[0], box[3] - box[1]
    acx, acy = anchor[0] + aw / 2, anchor[1] + ah / 2
    bcx, bcy = box[0] + bw / 2, box[1] + bh / 2
    wx, wy, ww, wh = WEIGHTS
    return [wx * (bcx - acx) / aw, wy * (bcy - acy) / ah, ww * math.log(bw / aw),
            wh * math.log(bh / ah)]


def decode(delta, anchor):
    aw, ah = anchor[2] - anchor[0], anchor[3] - anchor[1]
    acx, acy = anchor[0] + aw / 2, anchor[1] + ah / 2
    wx, wy, ww, wh = WEIGHTS
    cx, cy = delta[0] / wx * aw + acx, delta[1] / wy * ah + acy
    w = math.exp(min(delta[2] / ww, SCALE_CLAMP)) * aw
    h = math.exp(min(delta[3] / wh, SCALE_CLAMP)) * ah
    return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]


def giou(a, b):
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1])
    iw = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    ih = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    union -= iw * ih
    hull = (max(a[2], b[2]) - min(a[0], b[0])) * (max(a[3], b[3]) - min(a[1], b[1]))
    return iw * ih / union - (hull - union) / hull


def hand_labels(anchors, gt, image_size, boundary):
    """Labels (-1 / 0 / 1) and matched ground-truth index of every anchor."""
    if not gt:
        return [0] * len(anchors), [None] * len(anchors)
    quality = [[iou(g, a) for a in anchors] for g in gt]
    labels, matches = [], []
    for j in range(len(anchors)):
        column = [quality[i][j] for i in range(len(gt))]
        best = max(column)
        matches.append(column.index(best))
        labels.append(0 if best < 0.3 else (-1 if best < 0.7 else 1))
    for row in quality:  # each ground truth's best anchors (ties included) are foreground
        for j, value in enumerate(row):
            if value == max(row):
                labels[j] = 1
    if boundary >= 0:
        h, w = image_size
        for j, a in enumerate(anchors):
            if not (a[0] >= -boundary and a[1] >= -boundary and a[2] < w + boundary
                    and a[3] < h + boundary):
                labels[j] = -1
    return labels, matches


def hand_sample(labels, batch_size):
    """The sample Detectron2 draws: randperm of the foreground, then of the background."""
    fg = [j for j, v in enumerate(labels) if v == 1]
    bg = [j for j, v in enumerate(labels) if v == 0]
    num_fg = min(len(fg), int(batch_size * 0.5))
    num_bg = min(len(bg), batch_size - num_fg)
    chosen_fg = [fg[i] for i in torch.randperm(len(fg))[:num_fg].tolist()]
    chosen_bg = [bg[i] for i in torch.randperm(len(bg))[:num_bg].tolist()]
    out = [-1] * len(labels)
    for j in chosen_fg:
        out[j] = 1
    for j in chosen_bg:
        out[j] = 0
    return out


def hand_losses(rpn, maps, gts, seed, batch_size, loss_type, beta, boundary):
    anchors = [a for level in hand_anchors() for a in level]
    logits, deltas = hand_predictions(rpn, maps)
    logits = [sum((lv[n] for lv in logits), []) for n in range(len(gts))]
    deltas = [sum((lv[n] for lv in deltas), []) for n in range(len(gts))]
    torch.manual_seed(seed)
    cls_sum, loc_sum, num_fg, num_bg, num_labelled_fg = 0.0, 0.0, 0, 0, 0
    for n, gt in enumerate(gts):
        labels, matches = hand_labels(anchors, gt, IMAGE_SIZES[n], boundary)
        num_labelled_fg += labels.count(1)
        labels = hand_sample(labels, batch_size)
        for j, label in enumerate(labels):
            if label < 0:
                continue
            x = logits[n][j]
            cls_sum += max(x, 0.0) - x * label + math.log1p(math.exp(-abs(x)))
            if label == 0:
                num_bg += 1
                continue
            num_fg += 1
            target = gt[matches[j]]
            if loss_type == "giou":
                loc_sum += 1.0 - giou(decode(deltas[n][j], anchors[j]), target)
                continue
            for d, t in zip(deltas[n][j], encode(anchors[j], target)):
                diff = abs(d - t)
                loc_sum += diff if beta == 0 else (0.5 * diff * diff / beta if diff < beta
                                                   else diff - 0.5 * beta)
    normalizer = batch_size * len(gts)
    return ({"loss_rpn_cls": 1.5 * cls_sum / normalizer,
             "loss_rpn_loc": 0.7 * loc_sum / normalizer},
            num_fg / len(gts), num_bg / len(gts), num_labelled_fg / len(gts))


def inputs(gts):
    maps = {"p2": torch.randn(2, 6, *MAP_SIZES[0]), "p3": torch.randn(2, 6, *MAP_SIZES[1])}
    images = ImageList(torch.rand(2, 3, 16, 20), IMAGE_SIZES)
    instances = []
    for size, gt in zip(IMAGE_SIZES, gts):
        inst = Instances(size)
        inst.gt_boxes = Boxes(torch.tensor(gt, dtype=torch.float32).reshape(-1, 4))
        instances.append(inst)
    return images, maps, instances


torch.manual_seed(0)
GTS = [[[1.3, 2.2, 9.7, 8.1], [6.4, 3.1, 17.9, 14.2], [0.2, 0.5, 6.1, 12.3],
        [9.8, 1.1, 18.7, 6.3], [3.3, 7.7, 13.1, 14.6]],
       [[2.6, 0.7, 12.2, 11.9], [11.1, 2.4, 19.6, 7.2], [0.4, 6.6, 7.9, 12.8],
        [13.3, 5.1, 19.2, 12.7]]]
images, maps, gt_instances = inputs(GTS)
worst = 0.0
for batch_size, loss_type, beta, boundary, seed in ((512, "smooth_l1", 0.0, -1.0, 3),
                                                    (8, "smooth_l1", 0.4, -1.0, 4),
                                                    (6, "smooth_l1", 0.0, 2.0, 5),
                                                    (12, "giou", 0.0, -1.0, 6)):
    rpn = make_rpn(batch_size, loss_type, beta, boundary).train()
    feature_list = [maps["p2"], maps["p3"]]
    expected, pos, neg, labelled = hand_losses(rpn, feature_list, GTS, seed, batch_size,
                                               loss_type, beta, boundary)
    torch.manual_seed(seed)
    with EventStorage() as storage:
        proposals, losses = rpn(images, maps, gt_instances)
        events = {k: v[0] for k, v in storage.latest().items()}
    diff = max(abs(losses[k].item() - expected[k]) / max(abs(expected[k]), 1e-6)
               for k in expected)
    worst = max(worst, diff)
    print(f"losses ({loss_type}, batch {batch_size}, beta {beta}, boundary {boundary}): "
          f"{ {k: round(v.item(), 6) for k, v in losses.items()} } vs hand "
          f"{ {k: round(v, 6) for k, v in expected.items()} }")
    check(sorted(losses) == ["loss_rpn_cls", "loss_rpn_loc"] and diff < 1e-4,
          f"RPN losses ({loss_type}, batch {batch_size}) equal the hand computation")
    check(events.get("rpn/num_pos_anchors") == pos and events.get("rpn/num_neg_anchors") == neg,
          f"events rpn/num_pos_anchors {events.get('rpn/num_pos_anchors')} and num_neg_anchors "
          f"{events.get('rpn/num_neg_anchors')} are the sample's counts per image ({pos}, {neg})")
    check(pos > 0 and neg > 0, "the sample holds foreground and background anchors")
    if batch_size < 2 * labelled:
        check(pos == batch_size // 2, f"foreground sampled: {pos} of {labelled} per image")
    check(len(proposals) == 2 and all(len(p) <= 20 for p in proposals),
          "training proposals: at most post_nms_topk (training) per image")
print(f"RPN losses vs hand computation: largest relative difference {worst:.2e}")

# an image without ground truth: all its anchors background, no regression loss from it
rpn = make_rpn(512).train()
images0, maps0, gt0 = inputs([[], GTS[1]])
expected, pos, neg, _ = hand_losses(rpn, [maps0["p2"], maps0["p3"]], [[], GTS[1]], 9, 512,
                                 "smooth_l1", 0.0, -1.0)
torch.manual_seed(9)
with EventStorage():
    _, losses = rpn(images0, maps0, gt0)
check(all(abs(losses[k].item() - expected[k]) < 1e-4 * max(abs(expected[k]), 1e-3)
          for k in expected), "an image without ground truth: losses equal the hand computation")

# proposals in inference: deltas decoded by hand, per-level top-k, clip, drop small, batched NMS
for min_size in (0.0, 3.0):
    rpn = make_rpn(min_size=min_size).eval()
    with torch.no_grad():
        proposals, losses = rpn(images, maps)
        logits, deltas = hand_predictions(rpn, [maps["p2"], maps["p3"]])
    anchors = hand_anchors()
    worst, same = 0.0, losses == {}
    for n, (h, w) in enumerate(IMAGE_SIZES):
        boxes, scores, levels = [], [], []
        for level in range(2):
            order = sorted(range(len(anchors[level])), key=lambda j: -logits[level][n][j])[:25]
            for j in order:
                b = decode(deltas[level][n][j], anchors[level][j])
                b = [min(max(b[0], 0.0), w), min(max(b[1], 0.0), h), min(max(b[2], 0.0), w),
                     min(max(b[3], 0.0), h)]
                if b[2] - b[0] > min_size and b[3] - b[1] > min_size:
                    boxes.append(b)
                    scores.append(logits[level][n][j])
                    levels.append(level)
        boxes_t, scores_t = torch.tensor(boxes), torch.tensor(scores)
        keep = torchvision.ops.batched_nms(boxes_t, scores_t, torch.tensor(levels), 0.6)[:15]
        got = proposals[n]
        same = same and got.image_size == (h, w) and len(got) == len(keep)
        if len(got) == len(keep):
            worst = max(worst, (got.proposal_boxes.tensor - boxes_t[keep]).abs().max().item(),
                        (got.objectness_logits - scores_t[keep]).abs().max().item())
    print(f"proposals (min size {min_size}) vs hand top-k + torchvision NMS: largest "
          f"difference {worst:.2e}")
    check(same and worst < 1e-4, f"proposals (min size {min_size}) equal the hand top-k, clip, "
          "filter and torchvision's batched_nms; no losses in inference")

# scripted (scripting_with_instances) equals eager
rpn = make_rpn().eval()
fields = {"proposal_boxes": Boxes, "objectness_logits": torch.Tensor}
scripted = scripting_with_instances(rpn, fields)
eager, _ = rpn(images, maps)
got, got_losses = scripted(images, maps)
check(len(got) == 2 and got_losses == {} and all(
    a.image_size == b.image_size
    and torch.equal(a.proposal_boxes.tensor, b.proposal_boxes.tensor)
    and torch.equal(a.objectness_logits, b.objectness_logits) for a, b in zip(eager, got)),
    "scripted RPN equals eager")

# find_top_rpn_proposals: non-finite values; traced on one shape, run on others
boxes_in = [torch.rand(2, 30, 4) * 10]
boxes_in[0][..., 2:] += boxes_in[0][..., :2]
scores_in = [torch.rand(2, 30)]
scores_in[0][0, 3] = float("inf")
boxes_in[0][0, 5, 1] = float("nan")
out = find_top_rpn_proposals(boxes_in, scores_in, [(20, 20), (20, 20)], 0.5, 100, 100, 0.0, False)
check(len(out[0]) <= 28 and torch.isfinite(out[0].objectness_logits).all()
      and torch.isfinite(out[0].proposal_boxes.tensor).all(),
      "inference: boxes or scores not finite are dropped")
raises(FloatingPointError, lambda: find_top_rpn_proposals(
    boxes_in, scores_in, [(20, 20)], 0.5, 100, 100, 0.0, True), "diverged")


def top_proposals(boxes, logits, image_size):
    r = find_top_rpn_proposals([boxes], [logits], [image_size], 0.7, 50, 40, 0.5, False)[0]
    return r.image_size, r.proposal_boxes.tensor, r.objectness_logits


def random_level(n):
    b = torch.rand(1, n, 4) * 60
    b[..., 2:] += b[..., :2]
    return b, torch.rand(1, n)


with torch.no_grad(), warnings.catch_warnings():
    warnings.simplefilter("ignore", torch.jit.TracerWarning)
    traced = torch.jit.trace(top_proposals, (*random_level(200), torch.tensor([80, 90])),
                             check_trace=False)
    ok = True
    for n, size in ((30, [50, 40]), (500, [100, 70])):
        b, s = random_level(n)
        a = top_proposals(b, s, torch.tensor(size))
        t = traced(b, s, torch.tensor(size))
        ok = ok and all(torch.equal(torch.as_tensor(x), torch.as_tensor(y)) for x, y in zip(a, t))
check(ok, "find_top_rpn_proposals traced on 200 anchors equals eager on 30 and 500")

# add_ground_truth_to_proposals
props = Instances((10, 12), proposal_boxes=Boxes(torch.tensor([[1.0, 1.0, 4.0, 5.0]])),
                  objectness_logits=torch.tensor([0.25]))
gt_boxes = Boxes(torch.tensor([[0.0, 0.0, 3.0, 3.0], [2.0, 1.0, 9.0, 8.0]]))
merged = add_ground_truth_to_proposals([gt_boxes], [props])[0]
sure = 1.0 - 1e-10
check(merged.image_size == (10, 12) and len(merged) == 3
      and torch.equal(merged.proposal_boxes.tensor[1:], gt_boxes.tensor)
      and torch.equal(merged.objectness_logits[1:],
                      torch.full((2,), math.log(sure / (1.0 - sure))))
      and merged.objectness_logits[0].item() == 0.25,
      "add_ground_truth_to_proposals appends the boxes with logit log(p / (1 - p)), "
      "p = 1 - 1e-10")
check(abs(torch.sigmoid(merged.objectness_logits[1].double()).item() - sure) < 1e-9,
      "the appended logit means P(object) = 1 - 1e-10")
props.extra = torch.tensor([7])
raises(AssertionError, lambda: add_ground_truth_to_proposals([gt_boxes], [props]), "extra")
gt_inst = Instances((10, 12), gt_boxes=gt_boxes, extra=torch.tensor([1, 2]),
                    other=torch.tensor([3, 4]))
merged = add_ground_truth_to_proposals([gt_inst], [props])[0]
check(merged.extra.tolist() == [7, 1, 2] and not merged.has("other"),
      "the proposals' fields are kept, gt's other fields dropped")
raises(ValueError, lambda: add_ground_truth_to_proposals([gt_inst, gt_inst], [props]),
       "same length")

# built from the config: Detectron2's names, shapes and init draws
cfg = get_cfg()
check(build_proposal_generator(cfg, {"res4": ShapeSpec(channels=16, stride=16)}).__class__
      is RPN and PROPOSAL_GENERATOR_REGISTRY.get("RPN") is RPN
      and RPN_HEAD_REGISTRY.get("StandardRPNHead") is StandardRPNHead,
      "build_proposal_generator: RPN by name; the registries")
cfg.MODEL.PROPOSAL_GENERATOR.NAME = "PrecomputedProposals"
check(build_proposal_generator(cfg, {}) is None, "PrecomputedProposals: no generator")
cfg.MODEL.PROPOSAL_GENERATOR.NAME = "NoSuchGenerator"
raises(KeyError, lambda: build_proposal_generator(cfg, {}), "NoSuchGenerator")
cfg = get_cfg()
torch.manual_seed(121)
rpn = RPN(cfg, {"res4": ShapeSpec(channels=16, stride=16)})
torch.manual_seed(121)
reference = [nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(16, 15, 1), nn.Conv2d(16, 60, 1)]
for conv in reference:
    nn.init.normal_(conv.weight, std=0.01)
    nn.init.constant_(conv.bias, 0)
state = rpn.state_dict()
names = [f"rpn_head.{m}.{p}" for m in ("conv", "objectness_logits", "anchor_deltas")
         for p in ("weight", "bias")]
check(sorted(state) == sorted(names), f"parameter names as Detectron2's: {sorted(state)}")
check(all(torch.equal(state[f"rpn_head.{m}.weight"], c.weight)
          and torch.equal(state[f"rpn_head.{m}.bias"], c.bias)
          for m, c in zip(("conv", "objectness_logits", "anchor_deltas"), reference)),
      "init: torch's default init of the three convs, then N(0, 0.01) and bias 0 in order")
buffers = dict(rpn.named_buffers())
check(list(buffers) == ["anchor_generator.cell_anchors.0"] and buffers[
    "anchor_generator.cell_anchors.0"].shape == (15, 4), "anchor generator's buffer")
check(rpn.in_features == ["res4"] and rpn.pre_nms_topk == {True: 12000, False: 6000}
      and rpn.post_nms_topk == {True: 2000, False: 1000} and rpn.batch_size_per_image == 256
      and rpn.loss_weight == {"loss_rpn_cls": 1.0, "loss_rpn_loc": 1.0}
      and rpn.anchor_matcher.labels == [0, -1, 1], "RPN's settings from the default config")
cfg.MODEL.RPN.CONV_DIMS = [8, -1, 4]
head = build_rpn_head(cfg, [ShapeSpec(channels=16, stride=16)])
check([c.out_channels for c in head.conv] == [8, 8, 4] and "conv.conv2.weight"
      in head.state_dict() and head.objectness_logits.in_channels == 4,
      "CONV_DIMS: a Sequential of conv0, conv1, ... (-1 keeps the channels)")

# errors
raises(ValueError, lambda: make_rpn(loss_type="l2"), "box_reg_loss_type")
raises(AssertionError, lambda: make_rpn().train()(images, maps), "gt_instances")
raises(ValueError, lambda: StandardRPNHead(in_channels=4, num_anchors=3, conv_dims=[8, 0]),
       "channels")
raises(ValueError, lambda: StandardRPNHead(in_channels=4, num_anchors=3, conv_dims=[]),
       "at least one")
cfg = get_cfg()
raises(ValueError, lambda: build_rpn_head(cfg, [ShapeSpec(channels=16, stride=8),
                                                ShapeSpec(channels=32, stride=16)]), "channels")
raises(KeyError, lambda: RPN(cfg, {"p2": ShapeSpec(channels=16, stride=4)}), "res4")
finish()
