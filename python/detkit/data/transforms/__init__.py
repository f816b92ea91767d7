"""detkit.data.transforms: Detectron2's transforms and augmentations (detectron2.data.transforms,
with fvcore's Transform family) on numpy images, coordinates, boxes and polygons."""
from .transform import *  # noqa: F401,F403
from .transform import BICUBIC, BILINEAR, NEAREST  # noqa: F401  (PIL's filter numbers)
from .augmentation import *  # noqa: F401,F403
from .augmentation_impl import *  # noqa: F401,F403
from .augmentation import _transform_to_aug  # noqa: F401
