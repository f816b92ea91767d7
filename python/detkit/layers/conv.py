"""Conv2d as Detectron2's detectron2.layers.Conv2d: torch's Conv2d with an optional norm and
activation applied after it."""
from torch import nn


class Conv2d(nn.Conv2d):
    def __init__(self, *args, **kwargs):
        """torch.nn.Conv2d's arguments, and `norm` (a module) and `activation` (a callable)."""
        norm = kwargs.pop("norm", None)
        activation = kwargs.pop("activation", None)
        super().__init__(*args, **kwargs)
        self.norm = norm
        self.activation = activation

    def forward(self, x):
        x = self._conv_forward(x, self.weight, self.bias)
        if self.norm is not None:
            x = self.norm(x)
        if self.activation is not None:
            x = self.activation(x)
        return x
