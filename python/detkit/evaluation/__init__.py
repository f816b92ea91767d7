"""detkit.evaluation: COCOEvaluator and inference_on_dataset as Detectron2's, over detkit's COCO
evaluation (pycocotools' numbers)."""
from .evaluator import COCOEvaluator, inference_on_dataset

__all__ = ["COCOEvaluator", "inference_on_dataset"]
