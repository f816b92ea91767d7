import os

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
    """The URL of the weights Detectron2's model zoo publishes for that config."""
    return _C.model_zoo_url(config_path)


def get_config(config_path, trained=False):
    """get_cfg() merged with the config file; with trained=True, MODEL.WEIGHTS is its URL."""
    cfg = get_cfg()
    cfg.merge_from_file(get_config_file(config_path))
    if trained:
        cfg.MODEL.WEIGHTS = get_checkpoint_url(config_path)
    return cfg
