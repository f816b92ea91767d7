#include "tests/parity/oracle.h"

#include <torch/serialize.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace detkit::testing {
namespace {

namespace fs = std::filesystem;

std::vector<char> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("oracle: cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("oracle: cannot write " + path.string());
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A fresh directory under the system temporary directory, removed when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "detkit_oracle_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("oracle: cannot create a temporary directory at " + pattern);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

std::string oracle_python() { return DETKIT_ORACLE_PYTHON; }

TensorMap run_oracle(const std::string& script, const std::string& mode, const TensorMap& inputs) {
  if (oracle_python().empty()) throw std::runtime_error("oracle: no python3 with torchvision");
  TempDir dir;
  const fs::path in = dir.path() / "in.pt", out = dir.path() / "out.pt";
  const fs::path err = dir.path() / "stderr.txt";
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : inputs) dict.insert(name, tensor);
  write_bytes(in, torch::pickle_save(dict));
  const std::string command = quoted(oracle_python()) + " " +
                              quoted(std::string(DETKIT_PARITY_DIR) + "/" + script) + " " +
                              quoted(in.string()) + " " + quoted(out.string()) + " " +
                              quoted(mode) + " 2> " + quoted(err.string());
  if (std::system(command.c_str()) != 0) {
    const std::vector<char> message = fs::exists(err) ? read_bytes(err) : std::vector<char>{};
    throw std::runtime_error("oracle: `" + command + "` failed:\n" +
                             std::string(message.begin(), message.end()));
  }
  const c10::IValue loaded = torch::pickle_load(read_bytes(out));
  if (!loaded.isGenericDict()) throw std::runtime_error("oracle: " + script + " wrote no dict");
  TensorMap result;
  for (const auto& entry : loaded.toGenericDict()) {
    result[entry.key().toStringRef()] = entry.value().toTensor();
  }
  return result;
}

}  // namespace detkit::testing
