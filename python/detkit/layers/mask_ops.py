"""Mask pasting as Detectron2's (detectron2.layers.mask_ops): paste_masks_in_image is detkit's
kernel (scriptable); pad_masks / scale_boxes / paste_mask_in_image_old are the older per-box
pasting with zero padding."""
from typing import Tuple

import numpy as np
import torch


def paste_masks_in_image(masks: torch.Tensor, boxes: torch.Tensor, image_shape: Tuple[int, int],
                         threshold: float = 0.5) -> torch.Tensor:
    """masks (N, Hm, Wm) probabilities, boxes (N, 4) XYXY in the image (a Boxes or a tensor),
    image_shape (height, width): (N, height, width) bool masks (threshold >= 0)."""
    if not isinstance(boxes, torch.Tensor):
        boxes = boxes.tensor  # a Boxes (eager only: scripted, boxes is a tensor)
    if masks.shape[-1] != masks.shape[-2]:
        raise ValueError("paste_masks_in_image: masks must be square, got " + str(masks.shape))
    height, width = int(image_shape[0]), int(image_shape[1])
    if masks.shape[0] == 0:
        return masks.new_empty((0, height, width), dtype=torch.bool)
    return torch.ops.detkit.paste_masks_in_image(masks, boxes.to(masks.dtype), height, width,
                                                 float(threshold))


@torch.jit.script_if_tracing
def _paste_masks_tensor_shape(masks: torch.Tensor, boxes: torch.Tensor,
                              image_shape: Tuple[torch.Tensor, torch.Tensor],
                              threshold: float = 0.5) -> torch.Tensor:
    """paste_masks_in_image with the image size as tensors (as under tracing)."""
    return paste_masks_in_image(masks, boxes, (int(image_shape[0]), int(image_shape[1])),
                                threshold)


def pad_masks(masks, padding):
    """masks (B, M, M) with `padding` zero cells on every side, and (M + 2 padding) / M."""
    if padding < 1:
        raise ValueError(f"pad_masks: padding must be at least 1, got {padding}")
    size = masks.shape[-1]
    padded = masks.new_zeros((masks.shape[0], size + 2 * padding, size + 2 * padding))
    padded[:, padding:padding + size, padding:padding + size] = masks
    return padded, float(size + 2 * padding) / size


def scale_boxes(boxes, scale):
    """(B, 4) XYXY boxes with width and height multiplied by scale about their centres."""
    centre = (boxes[:, :2] + boxes[:, 2:]) * 0.5
    half = (boxes[:, 2:] - boxes[:, :2]) * (0.5 * scale)
    return torch.cat([centre - half, centre + half], dim=1)


def paste_mask_in_image_old(mask, box, img_h, img_w, threshold):
    """The per-box pasting Detectron2 no longer uses: box truncated to integer pixels, mask
    resized to (x1 - x0 + 1, y1 - y0 + 1) with PIL's bilinear filter, then thresholded (kept as
    0..255 when threshold < 0); (img_h, img_w) uint8."""
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError("paste_mask_in_image_old needs Pillow (PIL)") from e
    x0, y0, x1, y1 = (int(v) for v in box.to(torch.int32).tolist())
    resized = Image.fromarray(mask.cpu().numpy()).resize((x1 - x0 + 1, y1 - y0 + 1),
                                                         resample=Image.BILINEAR)
    resized = np.asarray(resized)
    if threshold >= 0:
        pasted = torch.from_numpy((resized > threshold).astype(np.uint8))
    else:
        pasted = torch.from_numpy(resized * 255).to(torch.uint8)
    image = torch.zeros((img_h, img_w), dtype=torch.uint8)
    left, right = max(x0, 0), min(x1 + 1, img_w)
    top, bottom = max(y0, 0), min(y1 + 1, img_h)
    if left < right and top < bottom:
        image[top:bottom, left:right] = pasted[top - y0:bottom - y0, left - x0:right - x0]
    return image
