from enum import IntEnum


class BoxMode(IntEnum):
    """Detectron2's BoxMode, with its values (dataset dicts store the int)."""

    XYXY_ABS = 0
    XYWH_ABS = 1
    XYXY_REL = 2
    XYWH_REL = 3
    XYWHA_ABS = 4
