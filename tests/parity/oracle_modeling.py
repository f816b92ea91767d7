"""Parity oracle for detkit/modeling's proposal-side blocks, on tensors saved by
tests/parity/oracle.cpp.

Box coding and matching come from torchvision (torchvision.models.detection._utils), which shares
Detectron2's math. Anchors (torchvision rounds its cell anchors, Detectron2 does not), label
subsampling and top-k proposal selection are re-written here from Detectron2's published
behaviour, because Detectron2 itself is not installed; NMS is torchvision's.

Usage: python3 oracle_modeling.py IN.pt OUT.pt MODE
IN.pt is a dict of tensors; OUT.pt receives a plain dict of tensors (torch.save).
MODE is one of box_regression, matcher, sampling, anchors, proposals.
"""
import math
import sys

import torch
import torchvision
from torchvision.models.detection import _utils as det_utils


def box_regression(t):
    """params: [wx, wy, ww, wh, scale_clamp]; src, target: (R, 4); deltas: (R, k*4)."""
    wx, wy, ww, wh, clamp = t["params"].tolist()
    coder = det_utils.BoxCoder((wx, wy, ww, wh), bbox_xform_clip=clamp)
    encoded = coder.encode_single(t["target"], t["src"])
    k = t["deltas"].shape[1] // 4
    # decode_single takes (R, k*4) codes for (R, 4) boxes and returns (R, k, 4).
    decoded = coder.decode_single(t["deltas"], t["src"]).reshape(-1, k * 4)
    return {"deltas": encoded, "boxes": decoded}


def matcher(t):
    """params: [low, high, allow_low_quality_matches]; quality: (M, N). Returns torchvision's
    matches: a ground-truth index, -1 below low, -2 between low and high."""
    low, high, allow = t["params"].tolist()
    m = det_utils.Matcher(high, low, allow_low_quality_matches=bool(allow))
    return {"matches": m(t["quality"].clone())}


def sampling(t):
    """Detectron2's subsample_labels; params: [num_samples, positive_fraction, bg_label, seed]."""
    num_samples, fraction, bg_label, seed = t["params"].tolist()
    labels = t["labels"]
    gen = torch.Generator().manual_seed(int(seed))
    positive = torch.nonzero((labels != -1) & (labels != int(bg_label)), as_tuple=True)[0]
    negative = torch.nonzero(labels == int(bg_label), as_tuple=True)[0]
    num_pos = min(positive.numel(), int(int(num_samples) * fraction))
    num_neg = min(negative.numel(), int(num_samples) - num_pos)
    perm1 = torch.randperm(positive.numel(), generator=gen)[:num_pos]
    perm2 = torch.randperm(negative.numel(), generator=gen)[:num_neg]
    return {"pos_idx": positive[perm1], "neg_idx": negative[perm2]}


def _cell_anchors(sizes, ratios):
    anchors = []
    for size in sizes:
        area = size ** 2.0
        for ratio in ratios:
            w = math.sqrt(area / ratio)
            h = ratio * w
            anchors.append([-w / 2.0, -h / 2.0, w / 2.0, h / 2.0])
    return torch.tensor(anchors).float()


def anchors(t):
    """Detectron2's DefaultAnchorGenerator. sizes_i, ratios_i: level i's lists;
    grid: (L, 3) rows [height, width, stride]; offset: scalar."""
    offset = float(t["offset"])
    out = {}
    for i, (height, width, stride) in enumerate(t["grid"].tolist()):
        cell = _cell_anchors(t[f"sizes_{i}"].tolist(), t[f"ratios_{i}"].tolist())
        shifts_x = torch.arange(offset * stride, width * stride, step=stride, dtype=torch.float32)
        shifts_y = torch.arange(offset * stride, height * stride, step=stride, dtype=torch.float32)
        shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
        shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
        shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
        out[f"anchors_{i}"] = (shifts.view(-1, 1, 4) + cell.view(1, -1, 4)).reshape(-1, 4)
        out[f"cell_{i}"] = cell
    return out


def proposals(t):
    """Detectron2's find_top_rpn_proposals at inference. proposals_i (N, K_i, 4), logits_i
    (N, K_i); image_sizes (N, 2); params: [nms_thresh, pre_nms_topk, post_nms_topk,
    min_box_size]. Returns boxes_n, logits_n per image."""
    nms_thresh, pre_topk, post_topk, min_size = t["params"].tolist()
    levels = sum(1 for k in t if k.startswith("logits_"))
    image_sizes = t["image_sizes"].tolist()
    n_images = len(image_sizes)
    boxes, scores, level_ids = [], [], []
    batch_idx = torch.arange(n_images)
    for i in range(levels):
        p, logits = t[f"proposals_{i}"], t[f"logits_{i}"]
        k = min(logits.shape[1], int(pre_topk))
        top_scores, top_idx = logits.topk(k, dim=1)
        boxes.append(p[batch_idx[:, None], top_idx])
        scores.append(top_scores)
        level_ids.append(torch.full((k,), i, dtype=torch.int64))
    boxes, scores, level_ids = torch.cat(boxes, 1), torch.cat(scores, 1), torch.cat(level_ids)
    out = {}
    for n, (h, w) in enumerate(image_sizes):
        b, s, lvl = boxes[n], scores[n], level_ids
        valid = torch.isfinite(b).all(dim=1) & torch.isfinite(s)
        b, s, lvl = b[valid], s[valid], lvl[valid]
        b = torch.stack((b[:, 0].clamp(0, w), b[:, 1].clamp(0, h),
                         b[:, 2].clamp(0, w), b[:, 3].clamp(0, h)), dim=1)
        keep = ((b[:, 2] - b[:, 0]) > min_size) & ((b[:, 3] - b[:, 1]) > min_size)
        b, s, lvl = b[keep], s[keep], lvl[keep]
        keep = torchvision.ops.batched_nms(b, s, lvl, nms_thresh)[: int(post_topk)]
        out[f"boxes_{n}"] = b[keep]
        out[f"logits_{n}"] = s[keep]
    return out


MODES = {f.__name__: f for f in (box_regression, matcher, sampling, anchors, proposals)}


def main():
    in_path, out_path, mode = sys.argv[1:4]
    torch.set_num_threads(1)
    result = {k: v.contiguous() for k, v in MODES[mode](torch.load(in_path, weights_only=False)).items()}
    if len(result) == 1:
        # A one-entry dict pickles with SETITEM, which libtorch's unpickler cannot read.
        result["_unused"] = torch.zeros(0)
    torch.save(result, out_path)


if __name__ == "__main__":
    main()
