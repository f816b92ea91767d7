"""The two Caffe2-style initialisations Detectron2's heads and backbones use (fvcore's
c2_msra_fill and c2_xavier_fill), without fvcore: the same draws from torch's generator, so a
seeded model starts from the same weights as Detectron2's."""
from torch import nn

__all__ = ["c2_msra_fill", "c2_xavier_fill"]


def c2_msra_fill(module: nn.Module) -> None:
    """He (MSRA) normal init of `module.weight` over its fan-out for ReLU; bias 0."""
    nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
    if module.bias is not None:
        nn.init.constant_(module.bias, 0)


def c2_xavier_fill(module: nn.Module) -> None:
    """Caffe2's XavierFill: uniform in +-sqrt(3 / fan_in) (kaiming_uniform_ with a=1); bias 0."""
    nn.init.kaiming_uniform_(module.weight, a=1)
    if module.bias is not None:
        nn.init.constant_(module.bias, 0)
