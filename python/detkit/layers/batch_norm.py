"""FrozenBatchNorm2d and get_norm as Detectron2's (detectron2.layers.batch_norm): the fixed affine
y = (x - running_mean) / sqrt(running_var + eps) * weight + bias, under Detectron2's buffer
names, and the NORM config values (MODEL.RESNETS.NORM, ...) as modules."""
import torch
from torch import nn
from torch.nn import functional as F


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d whose statistics and affine parameters are fixed buffers (no gradients to
    them; the gradient flows to the input)."""

    _version = 3

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features, self.eps = num_features, eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features) - eps)

    def forward(self, x):
        if x.requires_grad:  # as an affine map, so that no gradient reaches the buffers
            scale = self.weight * (self.running_var + self.eps).rsqrt()
            shift = self.bias - self.running_mean * scale
            out_dtype = x.dtype
            return x * scale.view(1, -1, 1, 1).to(out_dtype) + shift.view(1, -1, 1, 1).to(out_dtype)
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=False, eps=self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        version = local_metadata.get("version", None)
        if version is None or version < 2:  # checkpoints without running statistics
            if prefix + "running_mean" not in state_dict:
                state_dict[prefix + "running_mean"] = torch.zeros_like(self.running_mean)
            if prefix + "running_var" not in state_dict:
                state_dict[prefix + "running_var"] = torch.ones_like(self.running_var)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self):
        return f"FrozenBatchNorm2d(num_features={self.num_features}, eps={self.eps})"

    @classmethod
    def convert_frozen_batchnorm(cls, module):
        """Every BatchNorm2d / SyncBatchNorm in module (module itself included) replaced by a
        FrozenBatchNorm2d holding its statistics and affine parameters."""
        if isinstance(module, (nn.modules.batchnorm.BatchNorm2d, nn.SyncBatchNorm)):
            frozen = cls(module.num_features, module.eps)
            if module.affine:
                frozen.weight.data = module.weight.data.clone().detach()
                frozen.bias.data = module.bias.data.clone().detach()
            frozen.running_mean.data = module.running_mean.data
            frozen.running_var.data = module.running_var.data
            return frozen
        for name, child in module.named_children():
            converted = cls.convert_frozen_batchnorm(child)
            if converted is not child:
                module.add_module(name, converted)
        return module


class LayerNorm(nn.Module):
    """Layer normalisation over the channels of (N, C, H, W) (Detectron2's channels-first LN)."""

    def __init__(self, normalized_shape, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(1, keepdim=True)
        variance = (x - mean).pow(2).mean(1, keepdim=True)
        x = (x - mean) / torch.sqrt(variance + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


def get_norm(norm, out_channels):
    """A NORM value ("", "BN", "SyncBN", "nnSyncBN", "FrozenBN", "GN", "LN") or a callable taking
    the channels, as a module; None for "" / None."""
    if norm is None:
        return None
    if isinstance(norm, str):
        if len(norm) == 0:
            return None
        makers = {
            "BN": nn.BatchNorm2d,
            "SyncBN": nn.SyncBatchNorm,
            "nnSyncBN": nn.SyncBatchNorm,
            "FrozenBN": FrozenBatchNorm2d,
            "GN": lambda channels: nn.GroupNorm(32, channels),
            "LN": lambda channels: LayerNorm(channels),
        }
        if norm not in makers:
            raise KeyError(f"get_norm: unknown norm '{norm}' (known: {', '.join(sorted(makers))})")
        norm = makers[norm]
    return norm(out_channels)
