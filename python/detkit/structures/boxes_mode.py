"""BoxMode as Detectron2's: the int values dataset dicts store, and convert() between modes."""
import math
from enum import IntEnum, unique

import numpy as np
import torch


@unique
class BoxMode(IntEnum):
    """XYXY_ABS (x0, y0, x1, y1), XYWH_ABS (x0, y0, w, h), the relative modes (refused by
    convert, as Detectron2's), XYWHA_ABS (xc, yc, w, h, angle in degrees counter-clockwise)."""

    XYXY_ABS = 0
    XYWH_ABS = 1
    XYXY_REL = 2
    XYWH_REL = 3
    XYWHA_ABS = 4

    @staticmethod
    def convert(box, from_mode, to_mode):
        """A k-list / k-tuple (k = 4 or 5), or an (N, k) numpy array or tensor, converted to
        `to_mode` and returned as the same type (the input is not changed)."""
        from_mode, to_mode = BoxMode(from_mode), BoxMode(to_mode)
        if from_mode == to_mode:
            return box
        relative = (BoxMode.XYXY_REL, BoxMode.XYWH_REL)
        if from_mode in relative or to_mode in relative:
            raise NotImplementedError(f"BoxMode.convert: the relative modes are not supported "
                                      f"({from_mode.name} -> {to_mode.name})")
        single = isinstance(box, (list, tuple))
        if single:
            if len(box) not in (4, 5):
                raise ValueError(f"BoxMode.convert takes a 4- or 5-element list or tuple, got "
                                 f"{len(box)} elements")
            boxes = torch.tensor(box)[None, :]
        elif isinstance(box, np.ndarray):
            boxes = torch.from_numpy(np.asarray(box)).clone()
        else:
            boxes = box.clone()
        converted = _convert(boxes, from_mode, to_mode)
        if single:
            return type(box)(converted.flatten().tolist())
        return converted.numpy() if isinstance(box, np.ndarray) else converted


def _convert(boxes, from_mode, to_mode):
    if (from_mode, to_mode) == (BoxMode.XYWH_ABS, BoxMode.XYXY_ABS):
        boxes[:, 2:4] += boxes[:, 0:2]
        return boxes
    if (from_mode, to_mode) == (BoxMode.XYXY_ABS, BoxMode.XYWH_ABS):
        boxes[:, 2:4] -= boxes[:, 0:2]
        return boxes
    if (from_mode, to_mode) == (BoxMode.XYWHA_ABS, BoxMode.XYXY_ABS):
        if boxes.shape[-1] != 5:
            raise ValueError(f"BoxMode.convert from XYWHA_ABS needs 5 values a box, got "
                             f"{boxes.shape[-1]}")
        dtype, b = boxes.dtype, boxes.double()
        radians = b[:, 4] * math.pi / 180.0
        cos, sin = radians.cos().abs(), radians.sin().abs()
        # the axis-aligned rectangle around the rotated box
        width, height = cos * b[:, 2] + sin * b[:, 3], cos * b[:, 3] + sin * b[:, 2]
        x0, y0 = b[:, 0] - width / 2.0, b[:, 1] - height / 2.0
        return torch.stack([x0, y0, x0 + width, y0 + height], dim=1).to(dtype)
    if (from_mode, to_mode) == (BoxMode.XYWH_ABS, BoxMode.XYWHA_ABS):
        dtype, b = boxes.dtype, boxes.double()
        centers = b[:, 0:2] + b[:, 2:4] / 2.0
        angles = torch.zeros((b.shape[0], 1), dtype=b.dtype)
        return torch.cat([centers, b[:, 2:4], angles], dim=1).to(dtype)
    raise NotImplementedError(f"BoxMode.convert from {from_mode.name} to {to_mode.name} is not "
                              "supported (as Detectron2's)")
