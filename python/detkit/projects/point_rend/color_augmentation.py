"""SSD's photometric augmentation (Liu et al., SSD: Single Shot MultiBox Detector, ECCV 2016) as
a Transform: random brightness, contrast, saturation and hue on uint8 images. Saturation and hue
go through OpenCV's HSV conversion (cv2 is imported when they run)."""
import random

import numpy as np

from ...data.transforms import Transform


class ColorAugSSDTransform(Transform):
    """Brightness (+-brightness_delta), then in a random order contrast (x [contrast_low,
    contrast_high]) and saturation (x [saturation_low, saturation_high]) / hue (+-hue_delta on
    OpenCV's 0..179 scale), each applied with probability 1/2, drawn from Python's `random`.
    Coordinates and segmentations are unchanged."""

    def __init__(self, img_format, brightness_delta=32, contrast_low=0.5, contrast_high=1.5,
                 saturation_low=0.5, saturation_high=1.5, hue_delta=18):
        super().__init__()
        if img_format not in ("BGR", "RGB"):
            raise ValueError(f"ColorAugSSDTransform: img_format must be BGR or RGB, got "
                             f"'{img_format}'")
        self.is_rgb = img_format == "RGB"
        del img_format
        self._set_attributes(locals())

    def apply_coords(self, coords):
        return coords

    def apply_segmentation(self, segmentation):
        return segmentation

    def apply_image(self, img, interp=None):
        if self.is_rgb:
            img = img[:, :, [2, 1, 0]]
        img = self.brightness(img)
        if random.randrange(2):
            img = self.hue(self.saturation(self.contrast(img)))
        else:
            img = self.contrast(self.hue(self.saturation(img)))
        if self.is_rgb:
            img = img[:, :, [2, 1, 0]]
        return img

    def convert(self, img, alpha=1, beta=0):
        """img * alpha + beta, clipped to 0..255, as uint8."""
        return np.clip(img.astype(np.float32) * alpha + beta, 0, 255).astype(np.uint8)

    def brightness(self, img):
        if random.randrange(2):
            return self.convert(img, beta=random.uniform(-self.brightness_delta,
                                                         self.brightness_delta))
        return img

    def contrast(self, img):
        if random.randrange(2):
            return self.convert(img, alpha=random.uniform(self.contrast_low, self.contrast_high))
        return img

    def saturation(self, img):
        if random.randrange(2):
            import cv2

            img = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
            img[:, :, 1] = self.convert(img[:, :, 1], alpha=random.uniform(
                self.saturation_low, self.saturation_high))
            return cv2.cvtColor(img, cv2.COLOR_HSV2BGR)
        return img

    def hue(self, img):
        if random.randrange(2):
            import cv2

            img = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
            shift = random.randint(-self.hue_delta, self.hue_delta)
            img[:, :, 0] = (img[:, :, 0].astype(int) + shift) % 180
            return cv2.cvtColor(img, cv2.COLOR_HSV2BGR)
        return img
