from dataclasses import dataclass
from typing import Optional


@dataclass
class ShapeSpec:
    """A tensor's shape without the batch: channels, height, width, stride (Detectron2's)."""

    channels: Optional[int] = None
    height: Optional[int] = None
    width: Optional[int] = None
    stride: Optional[int] = None
