import os

import torch

from .. import _C
from ..config import get_cfg

_CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")


def get_config_file(config_path):
    """The path of a shipped config, e.g. "COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_3x.yaml"."""
    path = os.path.join(_CONFIGS, config_path)
    if not os.path.isfile(path):
        raise RuntimeError(f"{config_path} not available in Model Zoo! (looked for {path})")
    return path


def get_checkpoint_url(config_path):
    """The URL of the weights Detectron2's model zoo publishes for that config (a ".py" name,
    Detectron2's LazyConfig twin of a ".yaml" one, gives the same URL)."""
    if config_path.endswith(".py"):
        config_path = config_path[:-len(".py")] + ".yaml"
    return _C.model_zoo_url(config_path)


def get_config(config_path, trained=False):
    """get_cfg() merged with the config file; with trained=True, MODEL.WEIGHTS is its URL."""
    cfg = get_cfg()
    cfg.merge_from_file(get_config_file(config_path))
    if trained:
        cfg.MODEL.WEIGHTS = get_checkpoint_url(config_path)
    return cfg


def get(config_path, trained=False, device=None):
    """The model of a shipped config, built by detkit.modeling.build_model; with trained=True its
    MODEL.WEIGHTS are Detectron2's published weights (downloaded once into detkit's cache, as
    `detkit train` does). device: MODEL.DEVICE, "cpu" by default where no GPU is visible."""
    from ..checkpoint import DetectionCheckpointer
    from ..modeling import build_model

    cfg = get_config(config_path, trained)
    if device is None and not torch.cuda.is_available():
        device = "cpu"
    if device is not None:
        cfg.MODEL.DEVICE = device
    model = build_model(cfg)
    DetectionCheckpointer(model).load(cfg.MODEL.WEIGHTS)
    return model
