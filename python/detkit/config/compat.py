"""Detectron2's config versions (detectron2.config.compat): upgrade_config, downgrade_config and
guess_version between version 0, 1 and 2 (the current one), by Detectron2's key renames.

A detkit CfgNode holds only version-2 keys (detkit's config tree has no place for an old name),
so on a CfgNode an upgrade only sets VERSION (merge_from_file reads a version-0 or version-1 file
by upgrading its keys, as Detectron2's does), and a downgrade below 2 is a detkit.Error naming
the first key that version would need. A nested dict ({"MODEL": {"WEIGHT": ...}}: a partial
config as read from an old YAML file) is converted for real: each renamed key it holds moves to
its other name, and sections left empty are removed."""
import copy
import logging

from .._C import Error, config_key_renames
from .config import CfgNode, get_cfg

__all__ = ["upgrade_config", "downgrade_config", "guess_version"]

# _RENAMES[v]: (name in version v - 1, name in version v): the C++ config tree's table, which
# merge_from_file also follows to read an old file.
_RENAMES = config_key_renames()
# Version 2 moved the anchors of RPN (or of RetinaNet) to MODEL.ANCHOR_GENERATOR.
_ANCHOR_KEYS = [("ANCHOR_ASPECT_RATIOS", "ASPECT_RATIOS"), ("ANCHOR_SIZES", "SIZES")]


def _latest():
    return get_cfg().VERSION


def _version_of(cfg, what):
    if isinstance(cfg, CfgNode):
        return cfg.VERSION
    if not isinstance(cfg, dict):
        raise TypeError(f"{what} takes a CfgNode or a nested dict, got {type(cfg).__name__}")
    if not isinstance(cfg.get("VERSION"), int):
        raise Error(f"{what}: the dict has no integer VERSION (guess_version(cfg, filename) "
                    f"guesses one)")
    return cfg["VERSION"]


def upgrade_config(cfg, to_version=None):
    """A copy of cfg converted from its VERSION to to_version (default: the latest)."""
    version = _version_of(cfg, "upgrade_config")
    to_version = _latest() if to_version is None else to_version
    if not 0 <= version <= to_version <= _latest():
        raise Error(f"upgrade_config: cannot upgrade from v{version} to v{to_version} "
                    f"(versions 0 to {_latest()} exist)")
    if isinstance(cfg, CfgNode):
        out = cfg.clone()  # its keys already have the latest names
        out.VERSION = to_version
        return out
    out = copy.deepcopy(cfg)
    for step in range(version + 1, to_version + 1):
        for old, new in _RENAMES[step]:
            _move(out, old, new)
        if step == 2:
            _upgrade_anchors(out)
        out["VERSION"] = step
    return out


def downgrade_config(cfg, to_version):
    """A copy of cfg converted from its VERSION down to to_version. Where an old version split
    one value in two (the anchors of RPN and RetinaNet), both get it."""
    version = _version_of(cfg, "downgrade_config")
    if not 0 <= to_version <= version <= _latest():
        raise Error(f"downgrade_config: cannot downgrade from v{version} to v{to_version} "
                    f"(versions 0 to {_latest()} exist)")
    if isinstance(cfg, CfgNode):
        if to_version < version:
            old, new = _RENAMES[version][0]
            raise Error(f"downgrade_config: version {version - 1} names '{new}' '{old}', a key "
                        f"detkit's config tree cannot hold (it holds the latest keys only); "
                        f"downgrade a nested dict instead")
        return cfg.clone()
    out = copy.deepcopy(cfg)
    for step in range(version, to_version, -1):
        for old, new in reversed(_RENAMES[step]):
            _move(out, new, old)
        if step == 2:
            _downgrade_anchors(out)
        out["VERSION"] = step - 1
    return out


def guess_version(cfg, filename):
    """The VERSION of a partial config that has none: 1 when it holds MODEL.WEIGHT or TEST.AUG_ON
    (names version 2 changed), else the latest. Logs the guess, naming filename."""
    logger = logging.getLogger(__name__)
    if any(_holds(cfg, name) for name in ("MODEL.WEIGHT", "TEST.AUG_ON")):
        logger.warning(f"Config '{filename}' has no VERSION. Assuming it to be v1.")
        return 1
    latest = _latest()
    logger.warning(f"Config '{filename}' has no VERSION. Assuming it to be compatible with "
                   f"latest v{latest}.")
    return latest


def _holds(cfg, name):
    node = cfg
    for part in name.split("."):
        if isinstance(node, CfgNode):
            if part not in node:
                return False
        elif not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _pop(cfg, name):
    """Removes name from the nested dict (and the sections it leaves empty); returns
    (found, value)."""
    parts = name.split(".")
    chain = [cfg]
    for part in parts[:-1]:
        node = chain[-1].get(part)
        if not isinstance(node, dict):
            return False, None
        chain.append(node)
    if parts[-1] not in chain[-1]:
        return False, None
    value = chain[-1].pop(parts[-1])
    for depth in range(len(chain) - 1, 0, -1):
        if chain[depth]:
            break
        del chain[depth - 1][parts[depth - 1]]
    return True, value


def _put(cfg, name, value):
    parts = name.split(".")
    node = cfg
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise Error(f"config key '{name}': '{part}' is a value, not a section")
    node[parts[-1]] = value


def _move(cfg, old, new):
    found, value = _pop(cfg, old)
    if found:
        _put(cfg, new, value)


def _meta_architecture(cfg):
    model = cfg.get("MODEL")
    if isinstance(model, dict) and "META_ARCHITECTURE" in model:
        return model["META_ARCHITECTURE"]
    return get_cfg().MODEL.META_ARCHITECTURE


def _upgrade_anchors(cfg):
    """RetinaNet keeps MODEL.RETINANET's anchors, other models MODEL.RPN's; the other set and
    RETINANET.ANCHOR_STRIDES (never used) are dropped."""
    kept, dropped = ("RETINANET", "RPN")
    if _meta_architecture(cfg) != "RetinaNet":
        kept, dropped = dropped, kept
    for old, new in _ANCHOR_KEYS:
        _move(cfg, f"MODEL.{kept}.{old}", f"MODEL.ANCHOR_GENERATOR.{new}")
        _pop(cfg, f"MODEL.{dropped}.{old}")
    _pop(cfg, "MODEL.RETINANET.ANCHOR_STRIDES")


def _downgrade_anchors(cfg):
    for old, new in _ANCHOR_KEYS:
        found, value = _pop(cfg, f"MODEL.ANCHOR_GENERATOR.{new}")
        if found:
            _put(cfg, f"MODEL.RPN.{old}", value)
            _put(cfg, f"MODEL.RETINANET.{old}", copy.deepcopy(value))
    _put(cfg, "MODEL.RETINANET.ANCHOR_STRIDES", [])
