#pragma once
// Normalisation layers by their config name (MODEL.RESNETS.NORM, MODEL.FPN.NORM, ...):
// "" (none), "BN", "SyncBN" / "naiveSyncBN" / "naiveSyncBN_N" (statistics of the global batch
// over all ranks, see sync_batch_norm.h; plain BN in one process), "FrozenBN", "GN" (32 groups).
#include <torch/nn/modules/container/any.h>

#include <string>

namespace detkit::layers {

/// An empty AnyModule for "", otherwise the norm layer for `channels` channels.
torch::nn::AnyModule make_norm(const std::string& name, int64_t channels);

}  // namespace detkit::layers
