"""@configurable (Detectron2's detectron2.config.configurable): a class's __init__ or a function
that can be called with explicit arguments or with a config, whose from_config turns the
config into those arguments (explicit keyword arguments given beside the config override it)."""
import functools
import inspect
import sys

from .config import CfgNode

__all__ = ["configurable"]

_USAGE = "Incorrect use of @configurable: decorate a class's __init__ (with a from_config " \
    "classmethod), or use @configurable(from_config=function) on a function"


def configurable(init_func=None, *, from_config=None):
    """Usage 1, on __init__ (the class has `@classmethod from_config(cls, cfg, ...)` returning
    __init__'s keyword arguments): A(a=1, b=2), A(cfg), A(cfg, b=3) and A(cfg=cfg, b=3).
    Usage 2, on a function: @configurable(from_config=lambda cfg: {...}); the wrapped function's
    .from_config is that function. A call is "with a config" when its first positional argument,
    or its `cfg` keyword argument, is a CfgNode (or an omegaconf DictConfig)."""
    if init_func is not None:
        if not (inspect.isfunction(init_func) and from_config is None
                and init_func.__name__ == "__init__"):
            raise TypeError(_USAGE)

        @functools.wraps(init_func)
        def wrapped_init(self, *args, **kwargs):
            try:
                from_config_func = type(self).from_config
            except AttributeError as e:
                raise AttributeError(f"{type(self).__name__}: a class with @configurable must "
                                     "have a 'from_config' classmethod.") from e
            if not inspect.ismethod(from_config_func):
                raise TypeError(f"{type(self).__name__}: a class with @configurable must have a "
                                "'from_config' classmethod (from_config is not one).")
            if _called_with_cfg(*args, **kwargs):
                init_func(self, **_arguments_from_config(from_config_func, *args, **kwargs))
            else:
                init_func(self, *args, **kwargs)

        return wrapped_init

    if from_config is None:
        return configurable  # @configurable() is @configurable
    if not inspect.isfunction(from_config):
        raise TypeError(f"@configurable(from_config=) must be a function, got {from_config!r}")

    def decorate(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            if _called_with_cfg(*args, **kwargs):
                return func(**_arguments_from_config(from_config, *args, **kwargs))
            return func(*args, **kwargs)

        wrapped.from_config = from_config
        return wrapped

    return decorate


def _arguments_from_config(from_config_func, *args, **kwargs):
    """from_config's keyword arguments for the call: the keyword arguments from_config does not
    take go to the decorated function as they are (all of them go to from_config when it takes
    **kwargs or *args)."""
    signature = inspect.signature(from_config_func)
    parameters = signature.parameters
    if next(iter(parameters), None) != "cfg":
        name = from_config_func.__name__ if inspect.isfunction(from_config_func) else \
            f"{from_config_func.__self__}.from_config"
        raise TypeError(f"{name} must take 'cfg' as the first argument!")
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters.values()):
        return from_config_func(*args, **kwargs)
    passed_on = {name: kwargs.pop(name) for name in list(kwargs) if name not in parameters}
    arguments = from_config_func(*args, **kwargs)
    if not isinstance(arguments, dict):
        raise TypeError(f"from_config must return a dict of arguments, got "
                        f"{type(arguments).__name__}")
    arguments.update(passed_on)
    return arguments


def _is_config(value):
    if isinstance(value, CfgNode):
        return True
    omegaconf = sys.modules.get("omegaconf")  # only if the caller uses it: not detkit's dependency
    return omegaconf is not None and isinstance(value, omegaconf.DictConfig)


def _called_with_cfg(*args, **kwargs):
    """Whether the call passes a config: as the first positional argument or as `cfg=`
    (from_config's first argument is always cfg)."""
    return (bool(args) and _is_config(args[0])) or _is_config(kwargs.get("cfg"))
