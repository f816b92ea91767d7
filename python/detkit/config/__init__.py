"""detkit.config: get_cfg() and CfgNode as Detectron2's (detectron2.config), over detkit's own
config tree: the same keys, defaults, types and errors as `detkit train` / the YAML files; and
Detectron2's @configurable and instantiate; config versions (compat)."""
from .compat import downgrade_config, guess_version, upgrade_config
from .config import CfgNode, get_cfg
from .configurable import configurable
from .instantiate import instantiate

__all__ = [
    "CfgNode", "configurable", "downgrade_config", "get_cfg", "guess_version", "instantiate",
    "upgrade_config",
]
