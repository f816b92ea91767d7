#pragma once
// torchvision's ImageNet ResNet weights (resnet18 ... resnet152, a flat state dict: conv1, bn1,
// layer1.0.conv1, layer1.0.downsample.0, ..., fc) under Detectron2's ResNet names.
#include <string>

#include "detkit/checkpoint/state_dict.h"

namespace detkit::checkpoint {

/// True when `dict` has torchvision's ResNet layout (conv1.weight and layer1.*, no prefix).
bool is_torchvision_resnet(const TensorDict& dict);

/// Detectron2's name for a torchvision ResNet tensor name, under `prefix`:
///   conv1.weight -> stem.conv1.weight, bn1.X -> stem.conv1.norm.X,
///   layer1.0.conv2.weight -> res2.0.conv2.weight, layer1.0.bn2.X -> res2.0.conv2.norm.X,
///   layer1.0.downsample.0.weight -> res2.0.shortcut.weight, downsample.1.X -> shortcut.norm.X.
/// Other names (fc.weight, fc.bias) are returned unchanged, without the prefix.
std::string torchvision_resnet_name(const std::string& name, const std::string& prefix);

/// Every tensor of `dict` renamed with torchvision_resnet_name.
TensorDict torchvision_resnet_to_detectron2(const TensorDict& dict, const std::string& prefix);

}  // namespace detkit::checkpoint
