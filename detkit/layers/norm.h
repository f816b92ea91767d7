#pragma once
// Normalisation layers by their config name (MODEL.RESNETS.NORM, MODEL.FPN.NORM, ...):
// "" (none), "BN", "SyncBN" / "naiveSyncBN" / "naiveSyncBN_N" (statistics of the global batch
// over all ranks, see sync_batch_norm.h; plain BN in one process), "FrozenBN", "GN" (32 groups).
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/any.h>

#include <string>
#include <unordered_set>
#include <utility>

#include "detkit/ops/blocked_maps.h"

namespace detkit::layers {

/// An empty AnyModule for "", otherwise the norm layer for `channels` channels.
torch::nn::AnyModule make_norm(const std::string& name, int64_t channels);

/// Whether make_norm(name, ...) has a form for blocked maps (ops/blocked_maps.h): "" (none), "BN",
/// "FrozenBN", "GN".
bool norm_has_blocked_form(const std::string& name);

/// `norm` (made by make_norm for such a name) applied to a blocked map, as its forward() does to
/// the NCHW map: BatchNorm by its batch's statistics in training (updating its running ones and
/// num_batches_tracked), by the running ones in eval; FrozenBN as its affine form; GroupNorm by
/// each image's groups. With `relu`, followed by a ReLU (fused into the norm's pass).
at::Tensor blocked_norm_forward(torch::nn::AnyModule& norm, const at::Tensor& x, bool relu);

/// Whether `norm` is, as it stands, a per-channel affine map: FrozenBN, or BN in eval with running
/// statistics (not: none, a batch-statistics BN, SyncBN, GN).
bool is_channel_affine(torch::nn::AnyModule& norm);
/// That map's (scale, shift) per channel, norm(x) = x * scale + shift; needs is_channel_affine.
std::pair<at::Tensor, at::Tensor> channel_affine(torch::nn::AnyModule& norm);

/// `norm` as a BatchNorm that normalizes by its batch's statistics (in training, or without
/// running statistics); nullptr for any other norm or mode.
torch::nn::BatchNorm2dImpl* normalizes_by_batch(torch::nn::AnyModule& norm);

/// A batch-statistics BatchNorm's arguments to ops::blocked_batch_norm for one forward pass, the
/// batch counted as its forward() counts it (num_batches_tracked; momentum or the cumulative
/// average's). Call once per forward pass.
ops::BatchNormArgs batch_statistics_step(torch::nn::BatchNorm2dImpl& bn);

/// The parameters (affine weight and bias) of every normalisation layer in `model`: BatchNorm,
/// NaiveSyncBatchNorm, GroupNorm, LayerNorm (FrozenBatchNorm2d has buffers only). What mixed
/// precision keeps in fp32.
std::unordered_set<const c10::TensorImpl*> normalization_parameters(const torch::nn::Module& model);

}  // namespace detkit::layers
