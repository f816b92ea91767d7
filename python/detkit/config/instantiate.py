"""Detectron2's detectron2.config.instantiate: a dict (or omegaconf DictConfig) with "_target_"
-> the call target(**the other keys), every value instantiated first, recursively; lists are
instantiated item by item; anything else is returned as it is."""
import builtins
import collections.abc as abc
import dataclasses
import importlib
import logging
import sys

__all__ = ["dump_dataclass", "instantiate"]


def _locate(name):
    """The object a dotted name such as "torch.nn.Conv2d" or "module.Class.method" names: the
    longest importable module prefix, then attributes; a bare name is a builtin."""
    parts = name.split(".")
    if len(parts) == 1 and hasattr(builtins, name):
        return getattr(builtins, name)
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj = importlib.import_module(module_name)
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            break
        return obj
    raise ImportError(f"instantiate: cannot locate _target_ '{name}'")


def _target_name(target):
    return f"{target.__module__}.{target.__qualname__}" if hasattr(target, "__qualname__") \
        else str(target)


def dump_dataclass(obj):
    """A dataclass instance -> a dict with "_target_" (its class's dotted name) and its fields,
    nested dataclasses dumped too, that instantiate() turns back into an equal object."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError("dump_dataclass() requires an instance of a dataclass.")
    out = {"_target_": _target_name(type(obj))}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        if dataclasses.is_dataclass(value):
            value = dump_dataclass(value)
        elif isinstance(value, (list, tuple)):
            value = [dump_dataclass(x) if dataclasses.is_dataclass(x) else x for x in value]
        out[field.name] = value
    return out


def instantiate(cfg):
    """Instantiates cfg recursively (see the module's docstring). omegaconf's ListConfig gives
    a ListConfig of the instantiated items, and a DictConfig of a structured dataclass its
    object (omegaconf is looked at only when the caller has imported it)."""
    omegaconf = sys.modules.get("omegaconf")
    if omegaconf is not None:
        if isinstance(cfg, omegaconf.ListConfig):
            return omegaconf.ListConfig([instantiate(x) for x in cfg],
                                        flags={"allow_objects": True})
        if isinstance(cfg, omegaconf.DictConfig) and \
                dataclasses.is_dataclass(cfg._metadata.object_type):
            return omegaconf.OmegaConf.to_object(cfg)
    if isinstance(cfg, list):
        return [instantiate(x) for x in cfg]
    if not (isinstance(cfg, abc.Mapping) and "_target_" in cfg):
        return cfg
    arguments = {k: instantiate(v) for k, v in cfg.items()}
    target = instantiate(arguments.pop("_target_"))
    name = target if isinstance(target, str) else _target_name(target)
    if isinstance(target, str):
        target = _locate(target)
    if not callable(target):
        raise TypeError(f"_target_ {target} does not define a callable object")
    try:
        return target(**arguments)
    except TypeError:
        logging.getLogger(__name__).error(f"Error when instantiating {name}!")
        raise
