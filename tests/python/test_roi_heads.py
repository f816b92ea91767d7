"""detkit.modeling.roi_heads from Python: FastRCNNOutputLayers' losses against a computation from
first principles (log-softmax cross-entropy, sigmoid BCE; smooth-L1 of the gt class's deltas
against the box encoding written out, GIoU of the decoded boxes), its inference against a hand
loop (per-class score threshold, torchvision's batched_nms, top k); mask_rcnn_loss against BCE
on the ground-truth masks cropped with torchvision's roi_align; keypoint_rcnn_loss against the
heatmap cell formula and cross-entropy; heatmaps_to_keypoints against detkit's C++ decoding;
the proposal sampling's labels against the IoU rule; detector_postprocess against its scaling;
StandardROIHeads (box, mask and keypoint heads) scripted equal to eager. The errors.
Usage: test_roi_heads.py [SHARED SOURCE DETKIT] (unused)."""
import math

import torch
import torchvision
from torch.nn import functional as F

from checks import check, finish, raises
from detkit import _C
from detkit.config import get_cfg
from detkit.export import freeze_training_mode, patch_instances
from detkit.layers import ShapeSpec
from detkit.modeling import Box2BoxTransform, detector_postprocess, sem_seg_postprocess
from detkit.modeling.roi_heads import (FastRCNNConvFCHead, FastRCNNOutputLayers,
                                       KRCNNConvDeconvUpsampleHead, MaskRCNNConvUpsampleHead,
                                       RotatedFastRCNNOutputLayers, StandardROIHeads,
                                       build_roi_heads, select_foreground_proposals)
from detkit.modeling.roi_heads.fast_rcnn import fast_rcnn_inference
from detkit.modeling.roi_heads.keypoint_head import keypoint_rcnn_loss
from detkit.modeling.roi_heads.mask_head import mask_rcnn_inference, mask_rcnn_loss
from detkit.structures import (BitMasks, Boxes, ImageList, Instances, Keypoints,
                               heatmaps_to_keypoints)
from detkit.utils.events import EventStorage
from detkit.utils.testing import random_boxes

torch.manual_seed(0)
K, WEIGHTS = 5, (10.0, 10.0, 5.0, 5.0)


def encode(src, dst):
    """R-CNN's box encoding written out: centre shift over size, log of size ratio."""
    sw, sh = src[:, 2] - src[:, 0], src[:, 3] - src[:, 1]
    dw, dh = dst[:, 2] - dst[:, 0], dst[:, 3] - dst[:, 1]
    dx = ((dst[:, 0] + dst[:, 2]) / 2 - (src[:, 0] + src[:, 2]) / 2) / sw
    dy = ((dst[:, 1] + dst[:, 3]) / 2 - (src[:, 1] + src[:, 3]) / 2) / sh
    return torch.stack([WEIGHTS[0] * dx, WEIGHTS[1] * dy, WEIGHTS[2] * torch.log(dw / sw),
                        WEIGHTS[3] * torch.log(dh / sh)], dim=1)


def decode(deltas, src):
    sw, sh = src[:, 2] - src[:, 0], src[:, 3] - src[:, 1]
    cx = (src[:, 0] + src[:, 2]) / 2 + deltas[:, 0] / WEIGHTS[0] * sw
    cy = (src[:, 1] + src[:, 3]) / 2 + deltas[:, 1] / WEIGHTS[1] * sh
    w, h = torch.exp(deltas[:, 2] / WEIGHTS[2]) * sw, torch.exp(deltas[:, 3] / WEIGHTS[3]) * sh
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=1)


def giou(a, b):
    inter_w = (torch.min(a[:, 2], b[:, 2]) - torch.max(a[:, 0], b[:, 0])).clamp(min=0)
    inter_h = (torch.min(a[:, 3], b[:, 3]) - torch.max(a[:, 1], b[:, 1])).clamp(min=0)
    inter = inter_w * inter_h
    union = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1]) + (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = union - inter
    hull = ((torch.max(a[:, 2], b[:, 2]) - torch.min(a[:, 0], b[:, 0])) *
            (torch.max(a[:, 3], b[:, 3]) - torch.min(a[:, 1], b[:, 1])))
    return inter / union - (hull - union) / hull


def bce(logits, target):
    return (logits.clamp(min=0) - logits * target + torch.log1p(torch.exp(-logits.abs()))).mean()


def proposals_with_gt(n, size=60.0):
    p = Instances((64, 64))
    p.proposal_boxes = Boxes(random_boxes(n, size))
    p.gt_boxes = Boxes(random_boxes(n, size))
    p.gt_classes = torch.randint(0, K + 1, (n,))  # K: background
    return p


# --- FastRCNNOutputLayers.losses -------------------------------------------------------------
props = [proposals_with_gt(7), proposals_with_gt(5)]
R = 12
boxes_p = torch.cat([p.proposal_boxes.tensor for p in props])
boxes_g = torch.cat([p.gt_boxes.tensor for p in props])
classes = torch.cat([p.gt_classes for p in props])
fg = (classes < K).nonzero().squeeze(1)
for beta, kind, agnostic, weight in ((0.0, "smooth_l1", False, 1.0),
                                     (0.5, "smooth_l1", True, {"loss_box_reg": 2.0}),
                                     (0.0, "giou", False, 1.0)):
    predictor = FastRCNNOutputLayers(ShapeSpec(channels=6, height=2, width=2),
                                     box2box_transform=Box2BoxTransform(WEIGHTS), num_classes=K,
                                     cls_agnostic_bbox_reg=agnostic, smooth_l1_beta=beta,
                                     box_reg_loss_type=kind, loss_weight=weight)
    logits, deltas = predictor(torch.randn(R, 6, 2, 2))
    with EventStorage() as storage:
        losses = predictor.losses((logits, deltas), props)
    log_probs = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    expected_cls = -log_probs[torch.arange(R), classes].mean()
    fg_deltas = deltas[fg] if agnostic else deltas.view(R, K, 4)[fg, classes[fg]]
    if kind == "smooth_l1":
        diff = (fg_deltas - encode(boxes_p[fg], boxes_g[fg])).abs()
        per = diff if beta == 0 else torch.where(diff < beta, 0.5 * diff ** 2 / beta,
                                                  diff - 0.5 * beta)
    else:
        per = 1 - giou(decode(fg_deltas, boxes_p[fg]), boxes_g[fg])
    box_factor = weight["loss_box_reg"] if isinstance(weight, dict) else weight
    expected_box = per.sum() / R * box_factor
    worst = max((losses["loss_cls"] - expected_cls).abs().item(),
                (losses["loss_box_reg"] - expected_box).abs().item())
    print(f"losses ({kind}, beta {beta}, agnostic {agnostic}) vs first principles: largest "
          f"difference {worst:.2e}")
    check(worst < 1e-5 and len(fg) > 0, f"FastRCNNOutputLayers losses ({kind}, beta {beta})")
    check("fast_rcnn/cls_accuracy" in storage.histories(), "classification accuracy logged")

predictor = FastRCNNOutputLayers(6, box2box_transform=Box2BoxTransform(WEIGHTS), num_classes=K,
                                 use_sigmoid_ce=True)
logits, deltas = predictor(torch.randn(R, 6))
with EventStorage():
    loss = predictor.losses((logits, deltas), props)["loss_cls"]
target = F.one_hot(classes, K + 1)[:, :K].float()
expected = (bce(logits[:, :K], target) * K)  # summed over classes, over regions
check(abs(loss.item() - expected.item()) < 1e-5, "sigmoid cross-entropy loss: summed BCE / R")
fed = FastRCNNOutputLayers(6, box2box_transform=Box2BoxTransform(WEIGHTS), num_classes=K,
                           use_sigmoid_ce=True, use_fed_loss=True, fed_loss_num_classes=1,
                           get_fed_loss_cls_weights=lambda: torch.ones(K))
logits, deltas = fed(torch.randn(R, 6))
with EventStorage():
    loss = fed.losses((logits, deltas), props)["loss_cls"]
present = sorted(set(classes.tolist()) - {K})  # the federated classes: those of the ground truth
per = logits[:, :K].clamp(min=0) - logits[:, :K] * target + torch.log1p(torch.exp(
    -logits[:, :K].abs()))
expected = per[:, present].sum() / R
check(abs(loss.item() - expected.item()) < 1e-5,
      f"federated loss: BCE over the ground truth's classes {present} only")
raises(ValueError, lambda: FastRCNNOutputLayers(
    6, box2box_transform=Box2BoxTransform(WEIGHTS), num_classes=K, use_sigmoid_ce=True,
    use_fed_loss=True, get_fed_loss_cls_weights=lambda: torch.ones(K + 2)), "7 weights")
logits = torch.zeros(0, K + 1, requires_grad=True)
deltas = torch.zeros(0, 4 * K, requires_grad=True)
empty = predictor.losses((logits, deltas), [])
check(all(v.item() == 0 for v in empty.values()), "no proposals: losses 0")

# --- fast_rcnn_inference vs a hand loop --------------------------------------------------------
boxes_in = [random_boxes(30, 80).repeat(1, K) + torch.randn(30, 4 * K) * 3,
            random_boxes(9, 80).repeat(1, K)]
scores_in = [F.softmax(torch.randn(30, K + 1) * 2, -1), F.softmax(torch.randn(9, K + 1), -1)]
boxes_in[0][3, 0] = float("nan")  # a non-finite row is dropped
shapes = [(50, 70), (64, 64)]
result, kept = fast_rcnn_inference(boxes_in, scores_in, shapes, 0.05, 0.4, 12)
for i, (b, s, (h, w)) in enumerate(zip(boxes_in, scores_in, shapes)):
    rows, cls, bx, sc = [], [], [], []
    for r in range(b.shape[0]):
        if not torch.isfinite(b[r]).all() or not torch.isfinite(s[r]).all():
            continue
        for c in range(K):
            if s[r, c] > 0.05:
                box = b[r, 4 * c:4 * c + 4].clone()
                box[0::2] = box[0::2].clamp(0, w)
                box[1::2] = box[1::2].clamp(0, h)
                rows.append(r), cls.append(c), bx.append(box), sc.append(s[r, c])
    bx, sc, cls, rows = torch.stack(bx), torch.stack(sc), torch.tensor(cls), torch.tensor(rows)
    keep = torchvision.ops.batched_nms(bx, sc, cls, 0.4)[:12]
    same = (torch.allclose(result[i].pred_boxes.tensor, bx[keep]) and
            torch.equal(result[i].scores, sc[keep]) and
            torch.equal(result[i].pred_classes, cls[keep]) and torch.equal(kept[i], rows[keep]))
    check(same and len(keep) > 0, f"fast_rcnn_inference image {i}: {len(keep)} detections as "
          "the hand loop with torchvision's batched_nms")

# --- mask head -----------------------------------------------------------------------------
masks = torch.rand(4, 40, 40) > 0.5
fg_props = Instances((40, 40))
fg_props.proposal_boxes = Boxes(random_boxes(4, 35))
fg_props.gt_classes = torch.tensor([0, 3, 1, 3])
fg_props.gt_masks = BitMasks(masks)
mask_logits = torch.randn(4, K, 14, 14)
with EventStorage():
    loss = mask_rcnn_loss(mask_logits, [fg_props, fg_props[:0]])
rois = torch.cat([torch.arange(4.0)[:, None], fg_props.proposal_boxes.tensor], 1)
cropped = torchvision.ops.roi_align(masks[:, None].float(), rois, 14, 1.0, 0, True)[:, 0] >= 0.5
expected = bce(mask_logits[torch.arange(4), fg_props.gt_classes], cropped.float())
print(f"mask_rcnn_loss vs BCE on roi_align-cropped targets: difference "
      f"{abs(loss.item() - expected.item()):.2e}")
check(abs(loss.item() - expected.item()) < 1e-6, "mask_rcnn_loss equals BCE on cropped masks")
pred = Instances((40, 40))
pred.pred_classes = torch.tensor([2, 0, 4, 4])
per_image = [pred[:1], pred[1:]]
mask_rcnn_inference(mask_logits, per_image)
probs = torch.cat([p.pred_masks for p in per_image])
check(torch.equal(probs, mask_logits[torch.arange(4), pred.pred_classes][:, None].sigmoid()) and
      len(per_image[1].pred_masks) == 3, "mask_rcnn_inference: each box's class mask, sigmoid")
raises(ValueError, lambda: mask_rcnn_loss(torch.randn(4, K, 14, 12), [fg_props]), "square")
raises(ValueError, lambda: MaskRCNNConvUpsampleHead(ShapeSpec(channels=4), num_classes=2,
                                                    conv_dims=[]), "non-empty")

# --- keypoint head -------------------------------------------------------------------------
kp_props = Instances((50, 50))
kp_props.proposal_boxes = Boxes(random_boxes(3, 45))
corner = kp_props.proposal_boxes.tensor[:, None, :2]
size = kp_props.proposal_boxes.tensor[:, None, 2:] - corner
points = torch.cat([corner + torch.rand(3, 4, 2) * size * 1.2 - 0.1 * size,
                    torch.tensor([2.0, 0.0, 1.0, 2.0]).expand(3, 4)[..., None]], dim=2)
points[0, 0, 0] = kp_props.proposal_boxes.tensor[0, 2]  # on the right border: the last cell
kp_props.gt_keypoints = Keypoints(points)
heat = torch.randn(3, 4, 8, 8)
loss = keypoint_rcnn_loss(heat, [kp_props], normalizer=None)
terms = []
for n in range(3):
    x0, y0, x1, y1 = kp_props.proposal_boxes.tensor[n].tolist()
    for k in range(4):
        x, y, v = points[n, k].tolist()
        cx = 7 if x == x1 else math.floor((x - x0) * 8 / (x1 - x0))
        cy = 7 if y == y1 else math.floor((y - y0) * 8 / (y1 - y0))
        if v > 0 and 0 <= cx < 8 and 0 <= cy < 8:
            terms.append(-torch.log_softmax(heat[n, k].flatten(), 0)[cy * 8 + cx])
expected = torch.stack(terms).sum() / len(terms)
check(len(terms) > 0 and abs(loss.item() - expected.item()) < 1e-5,
      f"keypoint_rcnn_loss equals the CE at the heatmap cells ({len(terms)} visible in-box)")
rois = random_boxes(6, 90)
rois[0] = torch.tensor([3.0, 4.0, 3.5, 40.0])  # narrower than a pixel
maps = torch.randn(6, 5, 56, 56)
decoded = heatmaps_to_keypoints(maps, rois)
native = _C.heatmaps_to_keypoints(maps, rois)
worst = (decoded - native).abs().max().item()
print(f"heatmaps_to_keypoints vs detkit's C++ decoding: largest difference {worst:.2e}")
check(worst < 1e-4, "heatmaps_to_keypoints equals detkit's C++ keypoint decoding")
scripted = torch.jit.script(heatmaps_to_keypoints)
check(torch.equal(scripted(maps, rois), decoded), "heatmaps_to_keypoints scripted equals eager")
raises(ValueError, lambda: KRCNNConvDeconvUpsampleHead(ShapeSpec(channels=4), num_keypoints=3,
                                                       conv_dims=[4], loss_normalizer=2),
       "loss_normalizer")

# --- proposal sampling ---------------------------------------------------------------------
cfg = get_cfg()
cfg.MODEL.ROI_HEADS.NUM_CLASSES = K
cfg.MODEL.ROI_HEADS.PROPOSAL_APPEND_GT = False
cfg.MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE = 16
cfg.MODEL.ROI_BOX_HEAD.NAME = "FastRCNNConvFCHead"
cfg.MODEL.ROI_BOX_HEAD.NUM_FC = 1
cfg.MODEL.ROI_BOX_HEAD.FC_DIM = 32
cfg.MODEL.ROI_BOX_HEAD.POOLER_TYPE = "ROIAlignV2"
shape = {"res4": ShapeSpec(channels=8, stride=16)}
heads = build_roi_heads(cfg, shape)
gt = Instances((64, 64), gt_boxes=Boxes(random_boxes(3, 60)), gt_classes=torch.tensor([4, 0, 2]))
prop = Instances((64, 64), proposal_boxes=Boxes(torch.cat([gt.gt_boxes.tensor + 1,
                                                            random_boxes(40, 60)])),
                 objectness_logits=torch.randn(43))
with EventStorage():
    sampled = heads.label_and_sample_proposals([prop], [gt])[0]
iou = torchvision.ops.box_iou(gt.gt_boxes.tensor, sampled.proposal_boxes.tensor)
best, match = iou.max(0)
expected = torch.where(best >= 0.5, gt.gt_classes[match], torch.full_like(match, K))
check(len(sampled) == 16 and torch.equal(sampled.gt_classes, expected),
      "sampled proposals' gt_classes follow the IoU >= 0.5 rule")
fg_mask = expected < K
check(torch.equal(sampled.gt_boxes.tensor[fg_mask], gt.gt_boxes.tensor[match[fg_mask]]),
      "foreground samples carry their matched gt_boxes")
check(int(fg_mask.sum()) <= 4, "at most POSITIVE_FRACTION of the samples are foreground")
raises(ValueError, lambda: select_foreground_proposals([prop], K), "gt_classes")

# --- detector_postprocess, sem_seg_postprocess -------------------------------------------------
det = Instances((40, 60))
det.pred_boxes = Boxes(torch.tensor([[6.0, 4.0, 30.0, 20.0], [59.0, 39.0, 59.5, 39.5]]))
det.pred_masks = torch.rand(2, 1, 28, 28)
det.pred_keypoints = torch.tensor([[[12.0, 10.0, 1.0]], [[1.0, 1.0, 1.0]]])
out = detector_postprocess(det, 80, 90)
check(out.image_size == (80, 90) and len(out) == 2 and torch.allclose(
    out.pred_boxes.tensor[0], torch.tensor([9.0, 8.0, 45.0, 40.0])),
    "detector_postprocess scales boxes by (90 / 60, 80 / 40)")
check(out.pred_masks.shape == (2, 80, 90) and out.pred_masks.dtype == torch.bool and
      torch.allclose(out.pred_keypoints[0, 0, :2], torch.tensor([18.0, 20.0])),
      "detector_postprocess pastes masks and scales keypoints")
logits = torch.randn(3, 32, 48)
check(torch.equal(sem_seg_postprocess(logits, (30, 40), 60, 80), F.interpolate(
    logits[None, :, :30, :40], (60, 80), mode="bilinear", align_corners=False)[0]),
    "sem_seg_postprocess crops then resizes")

# --- StandardROIHeads scripted equals eager -------------------------------------------------
cfg.MODEL.MASK_ON = True
cfg.MODEL.KEYPOINT_ON = True
cfg.MODEL.ROI_KEYPOINT_HEAD.CONV_DIMS = [8]
cfg.MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS = 3
cfg.MODEL.ROI_MASK_HEAD.CONV_DIM = 8
cfg.MODEL.ROI_HEADS.SCORE_THRESH_TEST = 0.01
heads = StandardROIHeads(cfg, shape).eval()
features = {"res4": torch.rand(2, 8, 4, 4)}
images = ImageList(torch.rand(2, 3, 64, 64), [(64, 64), (50, 60)])
proposals = [Instances(s, proposal_boxes=Boxes(random_boxes(6, 45)),
                       objectness_logits=torch.randn(6)) for s in images.image_sizes]
with torch.no_grad():
    eager, _ = heads(images, features, proposals)
fields = {"proposal_boxes": Boxes, "objectness_logits": torch.Tensor, "pred_boxes": Boxes,
          "scores": torch.Tensor, "pred_classes": torch.Tensor, "pred_masks": torch.Tensor,
          "pred_keypoints": torch.Tensor, "pred_keypoint_heatmaps": torch.Tensor}
with freeze_training_mode(heads), patch_instances(fields) as Scripted:
    scripted = torch.jit.script(heads)
    scripted_out, _ = scripted(images, features, [Scripted.from_instances(p) for p in proposals])
same = all(torch.equal(a.pred_boxes.tensor, b.pred_boxes.tensor) and
           torch.equal(a.pred_masks, b.pred_masks) and
           torch.equal(a.pred_keypoints, b.pred_keypoints) for a, b in zip(eager, scripted_out))
check(same and sum(len(e) for e in eager) > 0,
      f"scripted StandardROIHeads equals eager ({[len(e) for e in eager]} detections)")

# --- errors --------------------------------------------------------------------------------
raises(ValueError, lambda: FastRCNNConvFCHead(ShapeSpec(channels=4, height=2, width=2),
                                              conv_dims=[], fc_dims=[]), "at least one")
raises(ValueError, lambda: FastRCNNOutputLayers(4, box2box_transform=Box2BoxTransform(WEIGHTS),
                                                num_classes=K, use_fed_loss=True),
       "use_sigmoid_ce")
bad = FastRCNNOutputLayers(4, box2box_transform=Box2BoxTransform(WEIGHTS), num_classes=K,
                           box_reg_loss_type="l2")
with EventStorage():
    raises(ValueError, lambda: bad.losses(bad(torch.randn(12, 4)), props), "'l2'")
rotated = RotatedFastRCNNOutputLayers(4, box2box_transform=Box2BoxTransform(WEIGHTS),
                                      num_classes=K)
raises(NotImplementedError, lambda: rotated.inference(rotated(torch.randn(2, 4)), []),
       "rotated NMS")
cfg.MODEL.ROI_HEADS.NAME = "Res5ROIHeads"
raises(ValueError, lambda: build_roi_heads(cfg, shape), "KEYPOINT_ON")
finish()
