"""From the RPN's decoded boxes and logits to proposals (Detectron2's proposal_utils):
find_top_rpn_proposals (per-level top k, clip, drop small boxes, per-level NMS, top k), and
add_ground_truth_to_proposals (the ground truth appended as sure proposals). Scriptable and
traceable."""
import math
from typing import List, Tuple, Union

import torch

from ...layers import batched_nms, move_device_like
from ...structures import Boxes, Instances

__all__ = ["add_ground_truth_to_proposals", "add_ground_truth_to_proposals_single_image",
           "find_top_rpn_proposals"]

# the objectness logit of a ground-truth box added as a proposal: log(p / (1 - p)) for
# p = 1 - 1e-10, with 1 - p computed in floating point (as Detectron2 does)
_SURE = 1.0 - 1e-10
_GROUND_TRUTH_LOGIT = math.log(_SURE / (1.0 - _SURE))


def _is_tracing() -> bool:
    """torch.jit.is_tracing(), False while scripting."""
    if torch.jit.is_scripting():
        return False
    return torch.jit.is_tracing()


def _creation_device(like: torch.Tensor) -> torch.device:
    """Where to create index tensors: like's device, or the CPU while tracing (then moved with
    move_device_like, so that the trace follows its input's device)."""
    if _is_tracing():
        return torch.device("cpu")
    return like.device


def find_top_rpn_proposals(proposals: List[torch.Tensor],
                           pred_objectness_logits: List[torch.Tensor],
                           image_sizes: List[Tuple[int, int]], nms_thresh: float,
                           pre_nms_topk: int, post_nms_topk: int, min_box_size: float,
                           training: bool):
    """proposals: L levels of (N, Ri, 4) boxes; pred_objectness_logits: L of (N, Ri). For each
    image of image_sizes ((h, w) each): the pre_nms_topk best-scored boxes of each level; boxes
    or scores not finite dropped (a FloatingPointError in training); boxes clipped to the image;
    boxes with a side <= min_box_size dropped; NMS at nms_thresh within each level; the best
    post_nms_topk kept. One Instances per image (proposal_boxes, objectness_logits), best
    first."""
    device = _creation_device(proposals[0])
    image_index = move_device_like(torch.arange(len(image_sizes), device=device), proposals[0])
    level_boxes = []
    level_scores = []
    level_ids = []
    for level, (boxes_i, logits_i) in enumerate(zip(proposals, pred_objectness_logits)):
        num_anchors = logits_i.shape[1]
        if isinstance(num_anchors, torch.Tensor):  # a traced size
            k = torch.clamp(num_anchors, max=pre_nms_topk)
        else:
            k = min(num_anchors, pre_nms_topk)
        scores_i, index_i = logits_i.topk(k, dim=1)
        level_boxes.append(boxes_i[image_index[:, None], index_i])
        level_scores.append(scores_i)
        level_ids.append(move_device_like(
            torch.full((k,), level, dtype=torch.int64, device=device), proposals[0]))
    all_boxes = torch.cat(level_boxes, dim=1)
    all_scores = torch.cat(level_scores, dim=1)
    all_levels = torch.cat(level_ids, dim=0)

    results: List[Instances] = []
    for n, image_size in enumerate(image_sizes):
        boxes = Boxes(all_boxes[n])
        scores = all_scores[n]
        levels = all_levels
        finite = torch.isfinite(boxes.tensor).all(dim=1) & torch.isfinite(scores)
        if not bool(finite.all()):
            if training:
                raise FloatingPointError(
                    "Predicted boxes or scores contain Inf/NaN. Training has diverged.")
            boxes, scores, levels = boxes[finite], scores[finite], levels[finite]
        boxes.clip(image_size)
        big_enough = boxes.nonempty(threshold=min_box_size)
        if _is_tracing() or int(big_enough.sum()) != len(boxes):
            boxes, scores, levels = boxes[big_enough], scores[big_enough], levels[big_enough]
        keep = batched_nms(boxes.tensor, scores, levels, nms_thresh)[:post_nms_topk]
        result = Instances(image_size)
        result.proposal_boxes = boxes[keep]
        result.objectness_logits = scores[keep]
        results.append(result)
    return results


def add_ground_truth_to_proposals(gt: Union[List[Instances], List[Boxes]],
                                  proposals: List[Instances]) -> List[Instances]:
    """add_ground_truth_to_proposals_single_image for each image."""
    assert gt is not None, "add_ground_truth_to_proposals: gt is None"
    if len(proposals) != len(gt):
        raise ValueError("proposals and gt should have the same length as the number of images!")
    return [add_ground_truth_to_proposals_single_image(gt_i, proposals_i)
            for gt_i, proposals_i in zip(gt, proposals)]


def add_ground_truth_to_proposals_single_image(gt: Union[Instances, Boxes],
                                               proposals: Instances) -> Instances:
    """The proposals followed by one per ground-truth box (gt: Instances with gt_boxes, or
    Boxes), whose objectness logit means P(object) = 1 - 1e-10. The result has the proposals'
    fields: each must be one of gt's (AssertionError naming it), gt's other fields are dropped."""
    if isinstance(gt, Boxes):
        gt = Instances(proposals.image_size, gt_boxes=gt)
    gt_boxes = gt.gt_boxes
    logits = torch.full((len(gt_boxes),), _GROUND_TRUTH_LOGIT,
                        device=proposals.objectness_logits.device)
    as_proposals = Instances(proposals.image_size, **gt.get_fields())
    as_proposals.proposal_boxes = gt_boxes
    as_proposals.objectness_logits = logits
    for name in proposals.get_fields().keys():
        assert as_proposals.has(name), \
            f"The attribute '{name}' in `proposals` does not exist in `gt`"
    return Instances.cat([proposals, as_proposals])
