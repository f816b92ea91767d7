"""Detectron2's rotated Fast R-CNN predictor (detectron2.modeling.roi_heads.rotated_fast_rcnn),
as far as detkit has rotated boxes: RotatedFastRCNNOutputLayers predicts and trains on (cx, cy,
w, h, angle) boxes with Box2BoxTransformRotated. Its inference needs a rotated NMS and RROIHeads
a rotated ROIAlign, kernels detkit does not have: inference is a NotImplementedError saying so,
and there is no RROIHeads."""
from ...structures import RotatedBoxes
from ..box_regression import Box2BoxTransformRotated
from .fast_rcnn import FastRCNNOutputLayers

__all__ = ["RotatedFastRCNNOutputLayers"]


class RotatedFastRCNNOutputLayers(FastRCNNOutputLayers):
    """FastRCNNOutputLayers for rotated boxes: five deltas per box (Box2BoxTransformRotated);
    the proposals' boxes are RotatedBoxes."""

    @classmethod
    def from_config(cls, cfg, input_shape):
        args = super().from_config(cfg, input_shape)
        args["box2box_transform"] = Box2BoxTransformRotated(
            weights=tuple(float(w) for w in cfg.MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS))
        return args

    def inference(self, predictions, proposals):
        raise NotImplementedError(
            "RotatedFastRCNNOutputLayers.inference needs a rotated NMS (batched_nms_rotated), "
            f"which detkit does not have; {RotatedBoxes.__name__} predictions can be decoded "
            "with predict_boxes / predict_probs")
