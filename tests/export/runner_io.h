#pragma once
// What both export runners (run_torchscript.cpp, run_eager.cpp) share: reading the inputs'
// files, the few integer arrays of their JSON, and the dtype names of the outputs they write.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace detkit::export_test {

inline std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The integers of a JSON array value "key": [a, b, ...] (the inputs' few fields).
inline std::vector<int64_t> ints_of(const std::string& json, const std::string& key) {
  const std::regex field("\"" + key + "\"\\s*:\\s*\\[([^\\]]*)\\]");
  std::smatch m;
  if (!std::regex_search(json, m, field)) throw std::runtime_error("no " + key + " in " + json);
  std::vector<int64_t> out;
  std::stringstream items(m[1].str());
  for (std::string item; std::getline(items, item, ',');) out.push_back(std::stoll(item));
  return out;
}

/// The numpy name of an output's dtype.
inline const char* type_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "float32";
    case at::kLong:
      return "int64";
    case at::kInt:
      return "int32";
    case at::kBool:
      return "bool";
    default:
      throw std::runtime_error(std::string("unexpected output type ") + c10::toString(t));
  }
}

}  // namespace detkit::export_test
