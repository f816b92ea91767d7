from collections import OrderedDict

from .. import _C
from ..data.catalog import DatasetCatalog, _TestLoader


class COCOEvaluator:
    """Detectron2's COCOEvaluator(dataset_name, tasks=None, distributed=True, output_dir=None):
    bbox, plus segm and keypoints where the model predicts them; with output_dir, the results
    go to output_dir/coco_instances_results.json."""

    def __init__(self, dataset_name, tasks=None, distributed=True, output_dir=None, **kwargs):
        self.dataset_name = dataset_name
        self.output_dir = output_dir


def inference_on_dataset(model, data_loader, evaluator):
    """Runs `model` (DefaultPredictor(cfg).model, DefaultTrainer(cfg).model or a
    detkit.modeling.build_model module) over the loader's
    dataset one image at a time and evaluates it. Returns Detectron2's OrderedDict: {"bbox":
    {"AP": ..., "AP50": ..., "AP-<class>": ...}, "segm": {...}, "keypoints": {...}} (x100).
    The loader is build_detection_test_loader(cfg, dataset_name), without a mapper."""
    if not isinstance(data_loader, _TestLoader):
        raise TypeError(f"inference_on_dataset: detkit runs the loader of "
                        f"build_detection_test_loader(cfg, dataset_name) (no mapper) natively; "
                        f"got {type(data_loader).__name__}")
    if data_loader.dataset_name != evaluator.dataset_name:
        raise _C.Error(f"inference_on_dataset: the loader reads '{data_loader.dataset_name}' but "
                       f"the evaluator evaluates '{evaluator.dataset_name}'")
    if not hasattr(model, "_evaluate"):
        raise TypeError(f"inference_on_dataset: detkit evaluates its own models natively "
                        f"(DefaultPredictor(cfg).model, DefaultTrainer(cfg).model or build_model "
                        f"of a built-in architecture), got {type(model).__name__}")
    DatasetCatalog.materialize(data_loader.dataset_name)
    results = model._evaluate(data_loader.cfg._tree, data_loader.dataset_name,
                              evaluator.output_dir or "")
    return OrderedDict((task, OrderedDict(metrics)) for task, metrics in results.items())
