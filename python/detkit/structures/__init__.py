"""detkit.structures: Boxes, BoxMode and Instances as Detectron2's (detectron2.structures)."""
from .boxes import Boxes
from .boxes_mode import BoxMode
from .instances import Instances

__all__ = ["Boxes", "BoxMode", "Instances"]
