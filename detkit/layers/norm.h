#pragma once
// Normalisation layers by their config name (MODEL.RESNETS.NORM, MODEL.FPN.NORM, ...):
// "" (none), "BN", "SyncBN" / "naiveSyncBN" / "naiveSyncBN_N" (statistics of the global batch
// over all ranks, see sync_batch_norm.h; plain BN in one process), "FrozenBN", "GN" (32 groups).
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>

#include <string>
#include <unordered_set>
#include <utility>

namespace detkit::layers {

/// An empty AnyModule for "", otherwise the norm layer for `channels` channels.
torch::nn::AnyModule make_norm(const std::string& name, int64_t channels);

/// Whether `norm` is, as it stands, a per-channel affine map: FrozenBN, or BN in eval with running
/// statistics (not: none, a batch-statistics BN, SyncBN, GN).
bool is_channel_affine(torch::nn::AnyModule& norm);
/// That map's (scale, shift) per channel, norm(x) = x * scale + shift; needs is_channel_affine.
std::pair<at::Tensor, at::Tensor> channel_affine(torch::nn::AnyModule& norm);

/// The parameters (affine weight and bias) of every normalisation layer in `model`: BatchNorm,
/// NaiveSyncBatchNorm, GroupNorm, LayerNorm (FrozenBatchNorm2d has buffers only). What mixed
/// precision keeps in fp32.
std::unordered_set<const c10::TensorImpl*> normalization_parameters(const torch::nn::Module& model);

}  // namespace detkit::layers
