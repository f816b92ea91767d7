"""Detectron2's RetinaNet head and its dense-detector inference (detectron2.modeling.meta_arch.
retinanet / dense_detector) as Python: `RetinaNetHead` (the two conv towers and the class / box
convolutions, Detectron2's names and initialisation) and the inference that turns its per-level
outputs into detections (score threshold, top-k candidates per level, box decoding, per-class NMS,
the detections cap). detkit's RetinaNet module holds such a head on the C++ model's tensors, so
`model.head(features)` and `model.forward_inference(images, features, predictions)` run as
Detectron2's do."""
import math
from typing import List

import torch
from torch import nn

from ...config import configurable
from ...layers import ShapeSpec, batched_nms, get_norm
from ...structures import Boxes, Instances
from ..anchor_generator import build_anchor_generator

__all__ = ["RetinaNetHead", "DenseInference", "permute_to_N_HWA_K"]


def permute_to_N_HWA_K(tensor: torch.Tensor, K: int) -> torch.Tensor:
    """(N, A * K, H, W) -> (N, H * W * A, K): one row per anchor, in Detectron2's anchor order."""
    n, _, h, w = tensor.shape
    return tensor.view(n, -1, K, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, K)


class RetinaNetHead(nn.Module):
    """Class and box subnets shared by every level: `forward(features)` gives per level the class
    logits (N, A * num_classes, H, W) and box deltas (N, A * 4, H, W)."""

    @configurable
    def __init__(self, *, input_shape: List[ShapeSpec], num_classes, num_anchors, conv_dims,
                 norm="", prior_prob=0.01):
        super().__init__()
        if norm in ("BN", "SyncBN"):
            raise NotImplementedError("RetinaNetHead: per-level batch norm (norm 'BN' / 'SyncBN') "
                                      "is not in detkit's Python head")
        channels = [input_shape[0].channels] + list(conv_dims)
        towers = {"cls_subnet": [], "bbox_subnet": []}
        for layers in towers.values():
            for in_channels, out_channels in zip(channels[:-1], channels[1:]):
                layers.append(nn.Conv2d(in_channels, out_channels, 3, stride=1, padding=1))
                if norm:
                    layers.append(get_norm(norm, out_channels))
                layers.append(nn.ReLU())
        self.cls_subnet = nn.Sequential(*towers["cls_subnet"])
        self.bbox_subnet = nn.Sequential(*towers["bbox_subnet"])
        self.cls_score = nn.Conv2d(channels[-1], num_anchors * num_classes, 3, stride=1, padding=1)
        self.bbox_pred = nn.Conv2d(channels[-1], num_anchors * 4, 3, stride=1, padding=1)
        for part in (self.cls_subnet, self.bbox_subnet, self.cls_score, self.bbox_pred):
            for layer in part.modules():
                if isinstance(layer, nn.Conv2d):
                    nn.init.normal_(layer.weight, mean=0, std=0.01)
                    nn.init.constant_(layer.bias, 0)
        # The class logits start at the prior probability (focal loss's initialisation).
        nn.init.constant_(self.cls_score.bias, -math.log((1 - prior_prob) / prior_prob))

    @classmethod
    def from_config(cls, cfg, input_shape: List[ShapeSpec]):
        counts = build_anchor_generator(cfg, input_shape).num_cell_anchors
        if len(set(counts)) != 1:
            raise ValueError(f"RetinaNetHead: every level needs the same number of anchors, got "
                             f"{counts}")
        return {"input_shape": input_shape, "num_classes": cfg.MODEL.RETINANET.NUM_CLASSES,
                "conv_dims": [input_shape[0].channels] * cfg.MODEL.RETINANET.NUM_CONVS,
                "prior_prob": cfg.MODEL.RETINANET.PRIOR_PROB, "norm": cfg.MODEL.RETINANET.NORM,
                "num_anchors": counts[0]}

    def forward(self, features: List[torch.Tensor]):
        logits = [self.cls_score(self.cls_subnet(f)) for f in features]
        deltas = [self.bbox_pred(self.bbox_subnet(f)) for f in features]
        return logits, deltas


class DenseInference:
    """Detectron2's dense-detector inference, for a module with `anchor_generator`,
    `box2box_transform`, `num_classes`, `test_score_thresh`, `test_topk_candidates`,
    `test_nms_thresh` and `max_detections_per_image`."""

    def forward_inference(self, images, features: List[torch.Tensor], predictions):
        """predictions: [per-level class logits, per-level box deltas] as the head gives them.
        Detections per image, in the (resized) input's coordinates."""
        logits, deltas = [[permute_to_N_HWA_K(x, k) for x in level_outputs]
                          for level_outputs, k in zip(predictions, (self.num_classes, 4))]
        anchors = self.anchor_generator(features)
        return [self.inference_single_image(anchors, [x[i].sigmoid() for x in logits],
                                            [x[i] for x in deltas], image_size)
                for i, image_size in enumerate(images.image_sizes)]

    def inference_single_image(self, anchors: List[Boxes], scores: List[torch.Tensor],
                               deltas: List[torch.Tensor], image_size):
        found = [self._decode_level(a, s, d, image_size)
                 for a, s, d in zip(anchors, scores, deltas)]
        found = Instances.cat(found)
        keep = batched_nms(found.pred_boxes.tensor, found.scores, found.pred_classes,
                           self.test_nms_thresh)
        return found[keep[: self.max_detections_per_image]]

    def _decode_level(self, anchors: Boxes, scores: torch.Tensor, deltas: torch.Tensor,
                      image_size):
        """The level's (anchor, class) pairs scoring above the threshold, at most
        test_topk_candidates of the best, decoded against their anchors."""
        above = scores > self.test_score_thresh
        candidates = torch.nonzero(above)  # (K, 2): anchor, class
        kept_scores, order = scores[above].topk(min(self.test_topk_candidates, len(candidates)))
        anchor_index, classes = candidates[order].unbind(dim=1)
        boxes = self.box2box_transform.apply_deltas(deltas[anchor_index],
                                                    anchors.tensor[anchor_index])
        return Instances(image_size, pred_boxes=Boxes(boxes), scores=kept_scores,
                         pred_classes=classes)
