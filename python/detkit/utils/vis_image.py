"""VisImage: the drawing Detectron2's Visualizer methods add to, an RGB canvas of the image's
size times `scale` (detkit draws on pixels with OpenCV, where Detectron2 keeps a matplotlib
figure)."""
import os

import numpy as np

from .. import _C


class VisImage:
    def __init__(self, img, scale=1.0):
        image = np.asarray(img)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"VisImage: expected an RGB (H, W, 3) image, got shape {image.shape}")
        if not scale > 0:
            raise ValueError(f"VisImage: scale must be positive, got {scale}")
        self.img = image
        self.scale = float(scale)
        self.width, self.height = image.shape[1], image.shape[0]
        self.reset_image(image)

    def reset_image(self, img):
        """Starts the drawing over from `img` (the image's size, values 0..255)."""
        image = np.ascontiguousarray(np.asarray(img).astype(np.uint8))
        if image.shape != (self.height, self.width, 3):
            raise ValueError(f"VisImage.reset_image: expected ({self.height}, {self.width}, 3), "
                             f"got {image.shape}")
        self.canvas = _C.draw_overlays(image, [], self.scale)  # resized as the drawer resizes

    def save(self, filepath):
        """Writes the drawing to `filepath` (PNG, JPEG, ... by its extension: OpenCV's writer,
        as `detkit infer` writes its drawings)."""
        _C.write_image(str(filepath), np.ascontiguousarray(self.canvas))

    def get_image(self):
        """The drawing: an RGB (H * scale, W * scale, 3) uint8 array (a copy)."""
        return self.canvas.copy()
