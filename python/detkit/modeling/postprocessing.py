"""Detectron2's postprocessing (detectron2.modeling.postprocessing): detections and semantic
segmentations resized from the size the model saw to the size asked for."""
import torch
from torch.nn import functional as F

from ..structures import Instances, ROIMasks

__all__ = ["detector_postprocess", "sem_seg_postprocess"]


def detector_postprocess(results: Instances, output_height: int, output_width: int,
                         mask_threshold: float = 0.5):
    """The detections of `results` (at results.image_size) at output_height x output_width:
    boxes (pred_boxes, else proposal_boxes) scaled and clipped, the empty ones dropped;
    pred_masks (N, 1, M, M) probabilities or ROIMasks pasted into (N, H, W) bool masks at
    mask_threshold; pred_keypoints' x, y scaled. A new Instances (its fields may be the input's,
    changed in place). The size may be 0-d tensors (as under tracing)."""
    if isinstance(output_width, torch.Tensor):
        # float copies: a true division even for integer tensors
        width, height = output_width.float(), output_height.float()
        new_size = torch.stack([output_height, output_width])
    else:
        width, height = output_width, output_height
        new_size = (output_height, output_width)
    scale_x = width / results.image_size[1]
    scale_y = height / results.image_size[0]
    results = Instances(new_size, **results.get_fields())

    if results.has("pred_boxes"):
        boxes = results.pred_boxes
    elif results.has("proposal_boxes"):
        boxes = results.proposal_boxes
    else:
        boxes = None
    assert boxes is not None, "Predictions must contain boxes!"
    boxes.scale(scale_x, scale_y)
    boxes.clip(results.image_size)
    results = results[boxes.nonempty()]

    if results.has("pred_masks"):
        masks = results.pred_masks
        roi_masks = masks if isinstance(masks, ROIMasks) else ROIMasks(masks[:, 0, :, :])
        results.pred_masks = roi_masks.to_bitmasks(results.pred_boxes, output_height,
                                                   output_width, mask_threshold).tensor
    if results.has("pred_keypoints"):
        results.pred_keypoints[:, :, 0] *= scale_x
        results.pred_keypoints[:, :, 1] *= scale_y
    return results


def sem_seg_postprocess(result, img_size, output_height, output_width):
    """result (C, H, W) logits of a padded batch: the img_size (height, width) top-left part,
    resized (bilinear) to (C, output_height, output_width)."""
    result = result[:, : img_size[0], : img_size[1]].expand(1, -1, -1, -1)
    return F.interpolate(result, size=(output_height, output_width), mode="bilinear",
                         align_corners=False)[0]
