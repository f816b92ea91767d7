"""Mask pasting as Detectron2's paste_masks_in_image: detkit's kernel."""
import torch


def paste_masks_in_image(masks, boxes, image_shape, threshold=0.5):
    """masks (N, Hm, Wm) probabilities, boxes (N, 4) XYXY in the image (a Boxes or a tensor),
    image_shape (height, width): (N, height, width) bool masks (threshold >= 0)."""
    if hasattr(boxes, "tensor"):
        boxes = boxes.tensor
    if masks.shape[-1] != masks.shape[-2]:
        raise ValueError(f"paste_masks_in_image: masks must be square, got {tuple(masks.shape)}")
    height, width = int(image_shape[0]), int(image_shape[1])
    if masks.shape[0] == 0:
        return masks.new_empty((0, height, width), dtype=torch.bool)
    return torch.ops.detkit.paste_masks_in_image(masks, boxes.to(masks.dtype), height, width,
                                                 float(threshold))
