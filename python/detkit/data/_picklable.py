"""A callable wrapper that pickles what the standard pickle cannot: a lambda or a function local
to another function is sent as its marshalled code, its module's name, its defaults and its
closure's values (the receiving process must run the same Python, as DataLoader workers do).
Detectron2 wraps mappers with cloudpickle for this; detkit does not depend on cloudpickle."""
import marshal
import pickle
import sys
import types


def _rebuild_function(code_bytes, module, name, defaults, kwdefaults, closure_values):
    code = marshal.loads(code_bytes)
    namespace = sys.modules[module].__dict__ if module in sys.modules else {"__builtins__":
                                                                            __builtins__}
    closure = tuple(types.CellType(v) for v in closure_values) if closure_values else None
    function = types.FunctionType(code, namespace, name, defaults, closure)
    function.__kwdefaults__ = kwdefaults
    return function


def _reduce_function(function):
    cells = function.__closure__ or ()
    return (_rebuild_function, (marshal.dumps(function.__code__), function.__module__,
                                function.__name__, function.__defaults__,
                                function.__kwdefaults__, tuple(c.cell_contents for c in cells)))


class PicklableWrapper:
    """Wraps `obj` (usually a function) so that it pickles even when it is a lambda or a local
    function; calls and attributes go to `obj`."""

    def __init__(self, obj):
        while isinstance(obj, PicklableWrapper):
            obj = obj._obj
        self._obj = obj

    def __reduce__(self):
        try:
            pickle.dumps(self._obj)
            return PicklableWrapper, (self._obj,)
        except (pickle.PicklingError, AttributeError, TypeError):
            if not isinstance(self._obj, types.FunctionType):
                raise
        return PicklableWrapper, (_ByCode(self._obj),)

    def __call__(self, *args, **kwargs):
        return self._obj(*args, **kwargs)

    def __getattr__(self, attr):
        if attr == "_obj":  # not set yet (during unpickling)
            raise AttributeError(attr)
        return getattr(self._obj, attr)


class _ByCode:
    """A function carried by its code through pickle; unpickles to the function itself."""

    def __init__(self, function):
        self.function = function

    def __reduce__(self):
        return _reduce_function(self.function)
