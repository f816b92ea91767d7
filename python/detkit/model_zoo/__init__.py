"""detkit.model_zoo: Detectron2's model_zoo (get, get_config_file, get_checkpoint_url, get_config) over
the configs detkit ships (in this package, as Detectron2 keeps its own) and the weights
Detectron2 publishes for them."""
from .model_zoo import get, get_checkpoint_url, get_config, get_config_file

__all__ = ["get", "get_checkpoint_url", "get_config", "get_config_file"]
