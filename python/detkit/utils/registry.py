"""Detectron2's detectron2.utils.registry: Registry (fvcore's, without fvcore) maps names to the
classes or functions registered under them; locate() imports an object from its dotted path and
_convert_target_to_string() gives the shortest dotted path that locate() resolves to the object."""
import importlib
import pydoc
from typing import Any

__all__ = ["Registry", "locate"]


class Registry:
    """Named objects: `@REG.register()` (or `REG.register(obj)`) stores obj under obj.__name__;
    REG.get(name) returns it. A name registered twice is an AssertionError naming it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._obj_map = {}

    def _do_register(self, name: str, obj: Any) -> None:
        assert name not in self._obj_map, \
            f"An object named '{name}' was already registered in '{self._name}' registry!"
        self._obj_map[name] = obj

    def register(self, obj: Any = None) -> Any:
        """As a decorator (`@REG.register()`) or a call (`REG.register(obj)`)."""
        if obj is None:
            def decorate(func_or_class):
                self._do_register(func_or_class.__name__, func_or_class)
                return func_or_class
            return decorate
        self._do_register(obj.__name__, obj)
        return obj

    def get(self, name: str) -> Any:
        if name not in self._obj_map:
            known = ", ".join(sorted(self._obj_map)) or "none"
            raise KeyError(f"No object named '{name}' found in '{self._name}' registry! "
                           f"(registered: {known})")
        return self._obj_map[name]

    def __contains__(self, name: str) -> bool:
        return name in self._obj_map

    def __iter__(self):
        return iter(self._obj_map.items())

    def __len__(self) -> int:
        return len(self._obj_map)

    def __repr__(self) -> str:
        rows = "\n".join(f"  {name}: {obj!r}" for name, obj in self._obj_map.items())
        return f"Registry of {self._name}:\n{rows}" if rows else f"Registry of {self._name}: empty"

    __str__ = __repr__


def _convert_target_to_string(t: Any) -> str:
    """"module.qualname" of t, with the module cut to its shortest prefix from which the same
    qualname still locates t (e.g. a class re-exported by its package)."""
    module, qualname = t.__module__, t.__qualname__
    parts = module.split(".")
    for k in range(1, len(parts)):
        candidate = ".".join(parts[:k]) + "." + qualname
        try:
            if locate(candidate) is t:
                return candidate
        except ImportError:
            continue
    return f"{module}.{qualname}"


def locate(name: str) -> Any:
    """The object a dotted path names ("torch.optim.SGD", "len", "pkg.mod.Class.Inner"). A path
    that does not resolve is an ImportError naming it."""
    obj = pydoc.locate(name)
    if obj is not None:
        return obj
    return _locate_by_import(name)


def _locate_by_import(name: str) -> Any:
    # pydoc.locate gives up on some paths (e.g. torch.optim.sgd.SGD): import the longest module
    # prefix that imports, then walk the rest as attributes
    parts = name.split(".")
    if not name or not all(parts):
        raise ImportError(f"Cannot locate object '{name}': not a dotted path")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        try:
            for attr in parts[k:]:
                obj = getattr(obj, attr)
        except AttributeError as e:
            raise ImportError(f"Cannot locate object '{name}': {e}") from e
        return obj
    raise ImportError(f"Cannot locate object '{name}': no module '{parts[0]}'")
