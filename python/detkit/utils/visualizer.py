"""detkit.utils.visualizer.Visualizer: Detectron2's Visualizer for predictions, drawn by detkit's
own drawer (what `detkit infer` writes): boxes, class names and scores, masks, keypoints."""
import numpy as np
import torch

from .. import _C


class VisImage:
    def __init__(self, rgb):
        self._rgb = rgb

    def get_image(self):
        """The drawing: an RGB (H, W, 3) uint8 array."""
        return self._rgb


class Visualizer:
    def __init__(self, img_rgb, metadata=None, scale=1.0, instance_mode=None):
        image = np.asarray(img_rgb)
        if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            raise _C.Error(f"Visualizer: the image must be an RGB (H, W, 3) uint8 array, got "
                           f"{image.dtype} of shape {image.shape}")
        self.img = image
        self.metadata = metadata
        self.scale = scale

    def draw_instance_predictions(self, predictions):
        """predictions: an Instances with pred_boxes, scores, pred_classes, and pred_masks /
        pred_keypoints where the model has them; labelled by metadata.thing_classes."""
        fields = {}
        for name, value in predictions.get_fields().items():
            if name in ("pred_boxes", "scores", "pred_classes", "pred_masks", "pred_keypoints"):
                tensor = value.tensor if name == "pred_boxes" else value
                fields[name] = torch.as_tensor(tensor).to("cpu")
        names = list(self.metadata.get("thing_classes", []) or []) if self.metadata else []
        bgr = np.ascontiguousarray(self.img[:, :, ::-1])
        return VisImage(_C.draw_instance_predictions(bgr, fields, names, float(self.scale)))
