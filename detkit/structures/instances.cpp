#include "detkit/structures/instances.h"

#include <ATen/ATen.h>

#include "detkit/utils/error.h"

namespace detkit::structures {

namespace {
template <typename T>
const char* type_name() {
  if constexpr (std::is_same_v<T, at::Tensor>) return "tensor";
  if constexpr (std::is_same_v<T, Boxes>) return "Boxes";
  if constexpr (std::is_same_v<T, PolygonMasks>) return "PolygonMasks";
  return "BitMasks";
}

template <typename T>
const T& typed(const Instances& instances, const std::string& name) {
  const auto& field = instances.get(name);
  if (const T* value = std::get_if<T>(&field)) return *value;
  throw Error("Instances field '" + name + "' is not a " + type_name<T>());
}
}  // namespace

int64_t field_length(const Instances::Field& field) {
  return std::visit(
      [](const auto& v) -> int64_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, at::Tensor>) return v.dim() == 0 ? 1 : v.size(0);
        else return v.size();
      },
      field);
}

Instances::Instances(int64_t image_height, int64_t image_width)
    : image_height_(image_height), image_width_(image_width) {}

void Instances::set(const std::string& name, Field value) {
  int64_t length = field_length(value);
  bool only_this = fields_.empty() || (fields_.size() == 1 && has(name));
  if (!only_this && length != size_)
    throw Error("Instances field '" + name + "' has length " + std::to_string(length) +
                ", but the other fields have length " + std::to_string(size_));
  fields_[name] = std::move(value);
  size_ = length;
}

void Instances::remove(const std::string& name) {
  if (fields_.erase(name) == 0) throw Error("Instances has no field '" + name + "'");
  if (fields_.empty()) size_ = 0;
}

const Instances::Field& Instances::get(const std::string& name) const {
  auto it = fields_.find(name);
  if (it == fields_.end()) {
    std::string names;
    for (const auto& n : field_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error("Instances has no field '" + name + "' (fields: " + names + ")");
  }
  return it->second;
}

const at::Tensor& Instances::tensor(const std::string& name) const {
  return typed<at::Tensor>(*this, name);
}
const Boxes& Instances::boxes(const std::string& name) const { return typed<Boxes>(*this, name); }
const PolygonMasks& Instances::polygon_masks(const std::string& name) const {
  return typed<PolygonMasks>(*this, name);
}
const BitMasks& Instances::bit_masks(const std::string& name) const {
  return typed<BitMasks>(*this, name);
}

std::vector<std::string> Instances::field_names() const {
  std::vector<std::string> names;
  for (const auto& [name, field] : fields_) names.push_back(name);
  return names;
}

Instances Instances::index(const at::Tensor& indices) const {
  Instances out(image_height_, image_width_);
  for (const auto& [name, field] : fields_) {
    out.set(name, std::visit(
                      [&](const auto& v) -> Field {
                        using T = std::decay_t<decltype(v)>;
                        if constexpr (std::is_same_v<T, at::Tensor>) {
                          if (indices.scalar_type() == at::kBool) return v.index({indices});
                          return v.index_select(0, indices.reshape({-1}).to(at::kLong));
                        } else {
                          return v.index(indices);
                        }
                      },
                      field));
  }
  return out;
}

Instances Instances::cat(const std::vector<Instances>& parts) {
  if (parts.empty()) throw Error("Instances::cat needs at least one Instances");
  const Instances& first = parts.front();
  Instances out(first.image_height_, first.image_width_);
  for (const auto& p : parts) {
    if (p.image_height_ != first.image_height_ || p.image_width_ != first.image_width_)
      throw Error("Instances::cat: image sizes differ");
    if (p.field_names() != first.field_names())
      throw Error("Instances::cat: field names differ");
  }
  for (const auto& [name, field] : first.fields_) {
    out.set(name, std::visit(
                      [&](const auto& v) -> Field {
                        using T = std::decay_t<decltype(v)>;
                        std::vector<T> values;
                        for (const auto& p : parts) values.push_back(std::get<T>(p.fields_.at(name)));
                        if constexpr (std::is_same_v<T, at::Tensor>) return at::cat(values, 0);
                        else return T::cat(values);
                      },
                      field));
  }
  return out;
}

Instances Instances::to(const c10::Device& device) const {
  Instances out(image_height_, image_width_);
  for (const auto& [name, field] : fields_) {
    out.set(name, std::visit(
                      [&](const auto& v) -> Field {
                        using T = std::decay_t<decltype(v)>;
                        if constexpr (std::is_same_v<T, at::Tensor>)
                          return v.to(device);
                        else if constexpr (std::is_same_v<T, PolygonMasks>)
                          return v;
                        else
                          return T(v.tensor().to(device));
                      },
                      field));
  }
  return out;
}

}  // namespace detkit::structures
