"""detkit.layers: Detectron2's layers (detectron2.layers) with its names. The ops are detkit's own
kernels, registered as torch ops (torch.ops.detkit.*) by `import detkit`, with their autograd."""
from .batch_norm import FrozenBatchNorm2d, LayerNorm, get_norm
from .conv import Conv2d
from .shape_spec import ShapeSpec
from .wrappers import (BatchNorm2d, ConvTranspose2d, Linear, cat, cross_entropy,
                       empty_input_loss_func_wrapper, interpolate, move_device_like,
                       nonzero_tuple, shapes_to_tensor)
from .weight_init import c2_msra_fill, c2_xavier_fill
from .nms import batched_nms, nms
from .roi_align import ROIAlign, roi_align
from .deform_conv import DeformConv, ModulatedDeformConv
from .mask_ops import paste_masks_in_image
from .losses import ciou_loss, diou_loss, giou_loss, smooth_l1_loss
from .blocks import CNNBlockBase, DepthwiseSeparableConv2d
from .aspp import ASPP

__all__ = ["Conv2d", "DeformConv", "FrozenBatchNorm2d", "LayerNorm", "ModulatedDeformConv",
           "ROIAlign", "ShapeSpec", "batched_nms", "cat", "ciou_loss", "diou_loss", "get_norm",
           "giou_loss", "nms", "nonzero_tuple", "paste_masks_in_image", "roi_align",
           "shapes_to_tensor", "smooth_l1_loss"]
__all__ += ["ASPP", "BatchNorm2d", "CNNBlockBase", "ConvTranspose2d", "DepthwiseSeparableConv2d",
            "Linear", "c2_msra_fill", "c2_xavier_fill", "cross_entropy",
            "empty_input_loss_func_wrapper", "interpolate", "move_device_like"]
