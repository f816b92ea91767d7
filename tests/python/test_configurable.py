"""detkit.config.configurable (Detectron2's @configurable) on classes and functions: explicit
arguments, a config (positional or cfg=) through from_config, explicit keyword arguments
overriding it and reaching __init__ when from_config does not take them, a subclass written in
the old cfg style, omegaconf's DictConfig; the errors (no from_config, not a classmethod, its
first argument not cfg, a positional argument beside the config).
Usage: test_configurable.py [SHARED SOURCE DETKIT] (unused)."""
from checks import check, finish, raises
from detkit.config import configurable, get_cfg


class Head:
    @configurable
    def __init__(self, input_shape, num_classes, lr, dropout=0.0):
        """Doc of Head"""
        self.args = (input_shape, num_classes, lr, dropout)

    @classmethod
    def from_config(cls, cfg, input_shape):
        return {"input_shape": input_shape, "num_classes": cfg.MODEL.ROI_HEADS.NUM_CLASSES,
                "lr": cfg.SOLVER.BASE_LR}


class OldStyle(Head):  # a subclass still taking cfg itself
    def __init__(self, cfg, input_shape):
        super().__init__(cfg, input_shape)


class Anything(Head):
    @classmethod
    def from_config(cls, cfg, input_shape, **kwargs):  # takes every argument itself
        return {"input_shape": input_shape, "num_classes": 1, "lr": cfg.SOLVER.BASE_LR, **kwargs}


cfg = get_cfg()
cfg.MODEL.ROI_HEADS.NUM_CLASSES = 7
cfg.SOLVER.BASE_LR = 0.05
check(Head(3, 5, 0.1).args == (3, 5, 0.1, 0.0), "explicit arguments as they are")
check(Head(cfg, input_shape=3).args == (3, 7, 0.05, 0.0), "a config: from_config's arguments")
check(Head(cfg=cfg, input_shape=3).args == (3, 7, 0.05, 0.0), "cfg= as a keyword")
check(Head(cfg, input_shape=3, lr=1.0, dropout=0.5).args == (3, 7, 1.0, 0.5),
      "keyword arguments beside the config override it and reach __init__")
check(OldStyle(cfg, 4).args == (4, 7, 0.05, 0.0), "an old-style subclass passing cfg up")
check(Anything(cfg, input_shape=2, dropout=0.25).args == (2, 1, 0.05, 0.25),
      "from_config taking **kwargs gets them all")
check("Doc of Head" in Head.__init__.__doc__, "the docstring kept")
check(Head(cfg, 3).args == (3, 7, 0.05, 0.0), "positional arguments go to from_config")


class CfgOnly(Head):
    @classmethod
    def from_config(cls, cfg):
        return {"num_classes": 2, "lr": cfg.SOLVER.BASE_LR}


check(CfgOnly(cfg, input_shape=6).args == (6, 2, 0.05, 0.0),
      "a keyword from_config does not take goes to __init__")
# a positional argument from_config does not take is not passed on to __init__ (error-prone)
raises(TypeError, lambda: CfgOnly(cfg, 6), "positional")
raises(TypeError, lambda: Head(cfg, input_shape=3, not_an_argument=1), "not_an_argument")


@configurable(from_config=lambda cfg, scale: {"lr": cfg.SOLVER.BASE_LR * scale,
                                              "steps": cfg.SOLVER.STEPS})
def schedule(lr, steps=(1,), warmup=0):
    return lr, tuple(steps), warmup


check(schedule(0.1) == (0.1, (1,), 0), "a function called plainly")
check(schedule(cfg, scale=2.0) == (0.1, (30000,), 0), "a function with a config")
check(schedule(cfg, scale=2.0, warmup=5, lr=3.0) == (3.0, (30000,), 5),
      "a function: keyword arguments override from_config's")
check(callable(schedule.from_config), "the function's from_config is kept")
raises(TypeError, lambda: schedule(cfg), "scale")


class NoFromConfig:
    @configurable
    def __init__(self, a=1):
        self.a = a


class NotClassmethod(NoFromConfig):
    def from_config(self, cfg):
        return {}


class BadFirstArgument(NoFromConfig):
    @classmethod
    def from_config(cls, config):
        return {}


raises(AttributeError, lambda: NoFromConfig(a=2), "from_config")
raises(TypeError, lambda: NotClassmethod(a=2), "classmethod")
raises(TypeError, lambda: BadFirstArgument(cfg), "'cfg' as the first argument")
raises(TypeError, lambda: configurable(lambda x: x), "Incorrect use of @configurable")
check(configurable() is configurable, "@configurable() is @configurable")

try:
    from omegaconf import OmegaConf
except ImportError:
    print("omegaconf not importable: its DictConfig not checked")
else:
    oc = OmegaConf.create({"MODEL": {"ROI_HEADS": {"NUM_CLASSES": 9}}, "SOLVER": {"BASE_LR": 0.3}})
    check(Head(oc, input_shape=1).args == (1, 9, 0.3, 0.0), "an omegaconf DictConfig is a config")
finish()
