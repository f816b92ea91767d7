#include "detkit/checkpoint/torchvision_resnet.h"

#include <regex>

namespace detkit::checkpoint {

bool is_torchvision_resnet(const TensorDict& dict) {
  if (!dict.count("conv1.weight")) return false;
  for (const auto& [name, tensor] : dict)
    if (name.rfind("layer1.", 0) == 0) return true;
  return false;
}

std::string torchvision_resnet_name(const std::string& name, const std::string& prefix) {
  static const std::regex stem(R"(^(conv1|bn1)\.(.+)$)");
  static const std::regex block(R"(^layer([1-4])\.(\d+)\.(conv|bn)([1-3])\.(.+)$)");
  static const std::regex shortcut(R"(^layer([1-4])\.(\d+)\.downsample\.([01])\.(.+)$)");
  std::smatch m;
  if (std::regex_match(name, m, stem))
    return prefix + (m[1] == "conv1" ? "stem.conv1." : "stem.conv1.norm.") + m[2].str();
  if (std::regex_match(name, m, block)) {
    const std::string stage = "res" + std::to_string(std::stoi(m[1]) + 1) + "." + m[2].str();
    return prefix + stage + ".conv" + m[4].str() + (m[3] == "bn" ? ".norm." : ".") + m[5].str();
  }
  if (std::regex_match(name, m, shortcut)) {
    const std::string stage = "res" + std::to_string(std::stoi(m[1]) + 1) + "." + m[2].str();
    return prefix + stage + (m[3] == "0" ? ".shortcut." : ".shortcut.norm.") + m[4].str();
  }
  return name;
}

TensorDict torchvision_resnet_to_detectron2(const TensorDict& dict, const std::string& prefix) {
  TensorDict out;
  for (const auto& [name, tensor] : dict) out[torchvision_resnet_name(name, prefix)] = tensor;
  return out;
}

}  // namespace detkit::checkpoint
