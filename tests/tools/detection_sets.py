"""Detections compared as matched sets, as tests/support/matched_sets.h does in C++: every
reference detection needs a partner of ours with the same class, its score within `score_tol`
and every box coordinate within `box_tol` px plus `box_rel_tol` times the reference box's larger
side (a box is its proposal moved by deltas times the proposal's size, so a difference of float
noise in the deltas grows with the box); one may stay unmatched only at the cut (its score
within `score_tol` of its set's lowest), where a near-tie decides which of two makes the top 100.
Every unmatched detection is listed with its nearest same-class candidate on the other side.
Masks are COCO compressed RLEs (decoded here with torch, no pycocotools) compared by the share of
the image's pixels on which they differ (and IoU, printed);
keypoints (K, 3) x, y, score by their largest difference."""
import math

import torch


def rle_decode(counts, height, width):
    """A COCO compressed counts string -> a flat bool tensor in column-major order."""
    runs, p = [], 0
    while p < len(counts):
        x, k, more = 0, 0, True
        while more:
            c = ord(counts[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(runs) > 2:
            x += runs[-2]
        runs.append(x)
    assert sum(runs) == height * width, f"RLE counts sum to {sum(runs)}, not {height}x{width}"
    values = torch.arange(len(runs)) % 2 == 1  # runs alternate 0, 1, 0, ...
    return values.repeat_interleave(torch.tensor(runs, dtype=torch.long))


def mask_iou(a, b):
    union = int((a | b).sum())
    return 1.0 if union == 0 else int((a & b).sum()) / union


class Detections:
    """boxes [[x0, y0, x1, y1]], scores, classes; optional masks (decoded, per detection) and
    keypoints ([[x, y, score]] per detection, Detectron2's continuous coordinates)."""

    def __init__(self, boxes, scores, classes, masks=None, keypoints=None):
        assert len(boxes) == len(scores) == len(classes)
        self.boxes, self.scores, self.classes = boxes, scores, classes
        self.masks, self.keypoints = masks, keypoints

    def __len__(self):
        return len(self.scores)


def box_extent(box):
    return max(box[2] - box[0], box[3] - box[1], 0.0)


def nearest(detections, index, others, taken):
    """The same-class detection of `others` (not in `taken`) nearest to detections[index] by box:
    a line naming both and their differences."""
    box, score, cls = detections.boxes[index], detections.scores[index], detections.classes[index]
    best = None
    for o in range(len(others)):
        if taken[o] or others.classes[o] != cls:
            continue
        diff = max(abs(a - b) for a, b in zip(others.boxes[o], box))
        if best is None or diff < best[0]:
            best = (diff, o)
    text = (f"#{index} class {cls} score {score:.6g} box [{', '.join(f'{v:.2f}' for v in box)}]")
    if best is None:
        return text + ": no unmatched same-class detection on the other side"
    diff, o = best
    return (text + f": nearest other #{o} score {others.scores[o]:.6g}, box diff {diff:.3g} px, "
            f"score diff {abs(others.scores[o] - score):.3g}")


def match(ours, reference, box_tol, score_tol, box_rel_tol=0.0):
    """Returns (partner per reference item or -1, report dict with the max differences)."""
    taken = [False] * len(ours)
    partner = [-1] * len(reference)
    report = {"box": 0.0, "score": 0.0, "swapped": 0}
    for r in range(len(reference)):
        best, best_diff = -1, box_tol + box_rel_tol * box_extent(reference.boxes[r])
        for o in range(len(ours)):
            if taken[o] or ours.classes[o] != reference.classes[r]:
                continue
            if abs(ours.scores[o] - reference.scores[r]) >= score_tol:
                continue
            diff = max(abs(a - b) for a, b in zip(ours.boxes[o], reference.boxes[r]))
            if diff < best_diff:
                best, best_diff = o, diff
        if best < 0:
            continue
        taken[best] = True
        partner[r] = best
        report["swapped"] += best != r
        report["box"] = max(report["box"], best_diff)
        report["score"] = max(report["score"], abs(ours.scores[best] - reference.scores[r]))

    def at_cut(scores, i):
        return scores[i] <= min(scores) + score_tol

    unmatched_ref = [r for r, p in enumerate(partner) if p < 0]
    unmatched_ours = [o for o, t in enumerate(taken) if not t]
    report["matched"] = len(reference) - len(unmatched_ref)
    unexplained_ref = [r for r in unmatched_ref if not at_cut(reference.scores, r)]
    unexplained_ours = [o for o in unmatched_ours if not at_cut(ours.scores, o)]
    report["unexplained"] = len(unexplained_ref) + len(unexplained_ours)
    reference_taken = [p >= 0 for p in partner]
    report["unexplained_lines"] = (
        [f"reference {nearest(reference, r, ours, taken)}" for r in unexplained_ref] +
        [f"ours {nearest(ours, o, reference, reference_taken)}" for o in unexplained_ours])
    if reference.keypoints is not None and ours.keypoints is not None:
        # A keypoint is its heatmap's argmax: where two cells hold values within score_tol (the
        # keypoint's score, equal on both sides), either may win, a jump of a cell (box / 56 px)
        # with nothing wrong. Such jumps are counted apart; every other keypoint is compared.
        worst_xy = worst_score = 0.0
        jumps = 0
        for r, o in enumerate(partner):
            if o < 0:
                continue
            for a, b in zip(ours.keypoints[o], reference.keypoints[r]):
                xy, score = max(abs(a[0] - b[0]), abs(a[1] - b[1])), abs(a[2] - b[2])
                worst_score = max(worst_score, score)
                if xy > box_tol and score < score_tol:
                    jumps += 1
                else:
                    worst_xy = max(worst_xy, xy)
        report["keypoint_xy"], report["keypoint_score"] = worst_xy, worst_score
        report["keypoint_tie_jumps"] = jumps
    if reference.masks is not None and ours.masks is not None:
        pairs = [(ours.masks[o], reference.masks[r]) for r, o in enumerate(partner) if o >= 0]
        report["mask_iou_min"] = min((mask_iou(a, b) for a, b in pairs), default=math.nan)
        # The fixtures' READMEs: masks equal to 0.1 % of the image's pixels (thread-count noise
        # flips 1-3 pixels, a large share of a small mask).
        report["mask_pixels_off"] = max((int((a ^ b).sum()) / a.numel() for a, b in pairs),
                                        default=0.0)
    return partner, report


def summary(n_ours, n_reference, report):
    text = (f"{report['matched']}/{n_reference} matched ({n_ours} ours, {report['swapped']} at "
            f"another rank), max diff boxes {report['box']:.3g} px, scores {report['score']:.3g}")
    if "keypoint_xy" in report:
        text += (f", keypoints x/y {report['keypoint_xy']:.3g} px, "
                 f"scores {report['keypoint_score']:.3g} ({report['keypoint_tie_jumps']} moved "
                 "to a tied heatmap cell)")
    if "mask_iou_min" in report:
        text += (f", masks differ on {100 * report['mask_pixels_off']:.3g} % of the image at most"
                 f" (IoU min {report['mask_iou_min']:.4f})")
    text += f"; unmatched not explained by a tie: {report['unexplained']}"
    return "\n    ".join([text] + report.get("unexplained_lines", []))
