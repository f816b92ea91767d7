#pragma once
// Normalisation layers by their config name (MODEL.RESNETS.NORM, MODEL.FPN.NORM, ...):
// "" (none), "BN", "SyncBN" (plain BN in one process), "FrozenBN", "GN" (32 groups).
#include <torch/nn/modules/container/any.h>

#include <string>

namespace detkit::layers {

/// An empty AnyModule for "", otherwise the norm layer for `channels` channels.
torch::nn::AnyModule make_norm(const std::string& name, int64_t channels);

}  // namespace detkit::layers
