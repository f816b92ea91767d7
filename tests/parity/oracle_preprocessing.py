"""Parity oracle for detkit's test-time preprocessing: Detectron2's, re-written here with PIL
(Debian's python3-pil), because Detectron2 itself is not installed. What it does is Detectron2's
DatasetMapper(cfg, is_train=False) on an image file:

  detection_utils.read_image: PIL.Image.open, the EXIF orientation applied
    (_apply_exif_orientation), .convert("RGB"), channels reversed for BGR;
  ResizeShortestEdge(MIN_SIZE_TEST, MAX_SIZE_TEST): get_output_shape's float arithmetic and
    int(x + 0.5) rounding; ResizeTransform on uint8: PIL's Image.resize((w, h), BILINEAR);
  the (3, H, W) tensor of the resized image.

Usage: python3 oracle_preprocessing.py IN.pt OUT.pt MODE
IN.pt is ignored (oracle.cpp always writes one); MODE is "MIN_SIZE:MAX_SIZE:FORMAT:PATH|PATH|...".
OUT.pt: "image#k" the k-th file's mapped image as uint8 (3, H, W), "size#k" its original
(height, width).
"""
import sys

import numpy as np
import torch
from PIL import Image

_EXIF_ORIENTATION = 0x0112
_TRANSPOSE = {
    2: Image.FLIP_LEFT_RIGHT,
    3: Image.ROTATE_180,
    4: Image.FLIP_TOP_BOTTOM,
    5: Image.TRANSPOSE,
    6: Image.ROTATE_270,
    7: Image.TRANSVERSE,
    8: Image.ROTATE_90,
}


def read_image(path, image_format):
    image = Image.open(path)
    try:
        orientation = image.getexif().get(_EXIF_ORIENTATION)
    except Exception:  # Detectron2 reads a broken EXIF block as no orientation
        orientation = None
    if orientation in _TRANSPOSE:
        image = image.transpose(_TRANSPOSE[orientation])
    array = np.asarray(image.convert("RGB"))
    return array[:, :, ::-1] if image_format == "BGR" else array


def output_shape(h, w, short_edge, max_size):
    scale = short_edge * 1.0 / min(h, w)
    new_h, new_w = (short_edge, scale * w) if h < w else (scale * h, short_edge)
    if max(new_h, new_w) > max_size:
        scale = max_size * 1.0 / max(new_h, new_w)
        new_h, new_w = new_h * scale, new_w * scale
    return int(new_h + 0.5), int(new_w + 0.5)


def map_image(path, short_edge, max_size, image_format):
    array = read_image(path, image_format)
    h, w = array.shape[:2]
    new_h, new_w = output_shape(h, w, short_edge, max_size)
    resized = Image.fromarray(np.ascontiguousarray(array)).resize((new_w, new_h), Image.BILINEAR)
    return torch.as_tensor(np.ascontiguousarray(np.asarray(resized).transpose(2, 0, 1))), (h, w)


def main():
    _, out_path, mode = sys.argv[1:4]
    short_edge, max_size, image_format, paths = mode.split(":", 3)
    out = {}
    for k, path in enumerate(paths.split("|")):
        image, size = map_image(path, int(short_edge), int(max_size), image_format)
        out[f"image#{k}"] = image
        out[f"size#{k}"] = torch.tensor(size)
    out["count"] = torch.tensor(len(paths.split("|")))  # at least two entries (oracle.h)
    torch.save(out, out_path)


if __name__ == "__main__":
    main()
