"""Detectron2's Augmentation protocol: an augmentation draws a Transform from the inputs its
get_transform names (image, boxes, sem_seg, ...), read from an AugInput, which it then
transforms in place. Draws use numpy's global random state, as Detectron2's, so a seeded run
draws what Detectron2's draws."""
import inspect

import numpy as np

from .transform import Transform, TransformList, _params_repr

__all__ = ["AugInput", "Augmentation", "AugmentationList", "StandardAugInput", "TransformGen",
           "apply_augmentations", "apply_transform_gens"]


def _check_image(img):
    if not isinstance(img, np.ndarray):
        raise AssertionError(f"[Augmentation] needs a numpy array, got a {type(img)}")
    if np.issubdtype(img.dtype, np.integer) and img.dtype != np.uint8:
        raise AssertionError(f"[Augmentation] got an image of type {img.dtype}: use uint8 or "
                             f"floating point")
    if img.ndim not in (2, 3):
        raise AssertionError(f"[Augmentation] an image is (H, W) or (H, W, C), got {img.ndim} "
                             f"dimensions")


def _input_names(aug):
    """The AugInput attributes aug.get_transform takes: its parameter names ('image' for one)."""
    if aug.input_args is None:
        params = list(inspect.signature(aug.get_transform).parameters.values())
        if len(params) == 1:
            aug.input_args = ("image",)
        else:
            for p in params:
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    raise TypeError(f"{type(aug)}.get_transform takes *args / **kwargs: the "
                                    f"default __call__ cannot know its inputs; override __call__")
            aug.input_args = tuple(p.name for p in params)
    return aug.input_args


class Augmentation:
    """Draws a Transform (get_transform) and applies it to an AugInput (__call__)."""

    input_args = None

    def _init(self, params=None):
        for key, value in (params or {}).items():
            if key != "self" and not key.startswith("_"):
                setattr(self, key, value)

    def get_transform(self, *args):
        raise NotImplementedError(f"{type(self).__name__}.get_transform")

    def __call__(self, aug_input):
        args = []
        for name in _input_names(self):
            try:
                args.append(getattr(aug_input, name))
            except AttributeError as e:
                raise AttributeError(f"{type(self)}.get_transform needs input attribute '{name}',"
                                     f" but it is not an attribute of {type(aug_input)}!") from e
        tfm = self.get_transform(*args)
        if not isinstance(tfm, (Transform, TransformList)):
            raise AssertionError(f"{type(self)}.get_transform must return a Transform, got "
                                 f"{type(tfm)}")
        aug_input.transform(tfm)
        return tfm

    def _rand_range(self, low=1.0, high=None, size=None):
        """A uniform draw in [low, high) ([0, low) with one bound)."""
        if high is None:
            low, high = 0, low
        return np.random.uniform(low, high, [] if size is None else size)

    def __repr__(self):
        return _params_repr(self, lambda: object.__repr__(self))

    __str__ = __repr__


TransformGen = Augmentation  # Detectron2's old name


class _TransformToAug(Augmentation):
    def __init__(self, tfm):
        self.tfm = tfm

    def get_transform(self, *args):
        return self.tfm

    def __repr__(self):
        return repr(self.tfm)

    __str__ = __repr__


def _transform_to_aug(tfm_or_aug):
    if isinstance(tfm_or_aug, Augmentation):
        return tfm_or_aug
    if not isinstance(tfm_or_aug, Transform):
        raise AssertionError(f"expected an Augmentation or a Transform, got {tfm_or_aug!r}")
    return _TransformToAug(tfm_or_aug)


class AugmentationList(Augmentation):
    """Augmentations applied in turn, each drawing from the input the previous ones made."""

    def __init__(self, augs):
        super().__init__()
        self.augs = [_transform_to_aug(a) for a in augs]

    def __call__(self, aug_input):
        return TransformList([aug(aug_input) for aug in self.augs])

    def __repr__(self):
        return f"AugmentationList[{', '.join(str(a) for a in self.augs)}]"

    __str__ = __repr__


class AugInput:
    """The image (and optionally XYXY boxes and a sem_seg label map) augmentations read and
    transform in place."""

    def __init__(self, image, *, boxes=None, sem_seg=None):
        _check_image(image)
        self.image = image
        self.boxes = boxes
        self.sem_seg = sem_seg

    def transform(self, tfm):
        self.image = tfm.apply_image(self.image)
        if self.boxes is not None:
            self.boxes = tfm.apply_box(self.boxes)
        if self.sem_seg is not None:
            self.sem_seg = tfm.apply_segmentation(self.sem_seg)

    def apply_augmentations(self, augmentations):
        return AugmentationList(augmentations)(self)


StandardAugInput = AugInput


def apply_augmentations(augmentations, inputs):
    """(the transformed image or AugInput, the TransformList); `inputs` an image or AugInput."""
    image_only = isinstance(inputs, np.ndarray)
    if image_only:
        inputs = AugInput(inputs)
    tfms = inputs.apply_augmentations(augmentations)
    return (inputs.image if image_only else inputs), tfms


apply_transform_gens = apply_augmentations
