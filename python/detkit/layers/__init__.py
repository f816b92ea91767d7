"""detkit.layers: Detectron2's layers (detectron2.layers) with its names. The ops are detkit's own
kernels, registered as torch ops (torch.ops.detkit.*) by `import detkit`, with their autograd."""
from .shape_spec import ShapeSpec
from .wrappers import cat, nonzero_tuple, shapes_to_tensor
from .nms import batched_nms, nms
from .roi_align import ROIAlign, roi_align
from .mask_ops import paste_masks_in_image
from .losses import ciou_loss, diou_loss, giou_loss, smooth_l1_loss

__all__ = ["ShapeSpec", "cat", "nonzero_tuple", "shapes_to_tensor", "batched_nms", "nms",
           "ROIAlign", "roi_align", "paste_masks_in_image", "ciou_loss", "diou_loss",
           "giou_loss", "smooth_l1_loss"]
