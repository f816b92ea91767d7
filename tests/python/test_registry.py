"""detkit.utils.registry as Detectron2's (fvcore's Registry, locate, _convert_target_to_string):
registration by decorator and by call, get / contains / iteration / len against the objects
registered, the duplicate and unknown-name errors; locate and _convert_target_to_string round
trips (a nested class, builtins, a torch optimizer pydoc cannot find by its defining module, a
class re-exported by its package, whose shortest path is the package's), the import errors.
Usage: test_registry.py [SHARED SOURCE DETKIT] (unused)."""
import torch

from checks import check, finish, raises
from detkit.engine import SimpleTrainer
from detkit.utils.registry import Registry, _convert_target_to_string, locate


class Outer:
    class Inner:
        pass


def test_registry():
    reg = Registry("THINGS")

    @reg.register()
    class Alpha:
        pass

    def beta():
        return 2

    returned = reg.register(beta)
    check(returned is beta, "register(obj) returns obj")
    check(reg.get("Alpha") is Alpha and reg.get("beta") is beta, "get returns what registered")
    check("Alpha" in reg and "gamma" not in reg, "__contains__")
    check(dict(iter(reg)) == {"Alpha": Alpha, "beta": beta} and len(reg) == 2,
          f"iteration gives (name, object) pairs: {[n for n, _ in reg]}")
    raises(AssertionError, lambda: reg.register(beta), "'beta' was already registered")
    raises(KeyError, lambda: reg.get("gamma"), "'gamma'")
    raises(KeyError, lambda: reg.get("gamma"), "Alpha, beta")
    check("THINGS" in repr(reg) and "Alpha" in repr(reg), f"repr names the registry: {reg!r}")


def test_locate():
    cases = [(Outer.Inner, f"{__name__}.Outer.Inner"), (len, "builtins.len"),
             (dict, "builtins.dict"), (torch.optim.SGD, "torch.optim.SGD"),
             (SimpleTrainer, "detkit.engine.SimpleTrainer")]
    for obj, want in cases:
        name = _convert_target_to_string(obj)
        check(name == want and locate(name) is obj, f"{want}: converted to {name}, located back")
    check(locate("torch.optim.sgd.SGD") is torch.optim.SGD, "locate('torch.optim.sgd.SGD')")
    check(locate("detkit.engine.simple_trainer.SimpleTrainer") is SimpleTrainer,
          "locate of the defining module's path")
    raises(ImportError, lambda: locate("asdf"), "asdf")
    raises(ImportError, lambda: locate("torch.optim.NoSuchThing"), "NoSuchThing")
    raises(ImportError, lambda: locate("torch..SGD"), "not a dotted path")


test_registry()
test_locate()
finish()
