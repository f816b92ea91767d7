// Runs a model.ts from C++ with libtorch alone (torch::jit::load), libdetkit_ops.so loaded with
// dlopen as a deploying program would (or linked): no other detkit library in the process, which
// it checks in /proc/self/maps. The same protocol as run_onnx.js, for check_export.py.
//
// run_torchscript MODEL OPS_LIBRARY IN_DIR OUT_DIR
//   IN_DIR/<stem>.json: {"shape": [3, H, W], "original_size": [h, w]}; IN_DIR/<stem>.u8 the image
//   (uint8, C x H x W). Writes OUT_DIR/<stem>.<output>.bin and OUT_DIR/<stem>.json ({output:
//   {"type", "dims"}, "milliseconds"}).
#include <dlfcn.h>
#include <torch/script.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/export/runner_io.h"

namespace fs = std::filesystem;

using detkit::export_test::ints_of;
using detkit::export_test::read;
using detkit::export_test::type_name;

namespace {

std::set<std::string> detkit_libraries() {
  std::set<std::string> names;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto at = line.find("libdetkit");
    if (at != std::string::npos) names.insert(fs::path(line.substr(line.find('/'))).filename());
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: run_torchscript MODEL OPS_LIBRARY IN_DIR OUT_DIR\n";
    return 2;
  }
  const fs::path model_path = argv[1], in_dir = argv[3], out_dir = argv[4];
  if (dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::cerr << "cannot load " << argv[2] << ": " << dlerror() << "\n";
    return 1;
  }
  torch::jit::Module model = torch::jit::load(model_path.string());
  const std::set<std::string> loaded = detkit_libraries();
  std::cout << "detkit libraries in this process:";
  for (const auto& name : loaded) std::cout << " " << name;
  std::cout << "\n";
  if (loaded != std::set<std::string>{"libdetkit_ops.so"}) return 1;
  fs::create_directories(out_dir);
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(in_dir))
    if (entry.path().extension() == ".json") inputs.push_back(entry.path());
  std::sort(inputs.begin(), inputs.end());
  torch::NoGradGuard no_grad;
  for (const auto& meta_path : inputs) {
    const std::string stem = meta_path.stem().string();
    const std::string meta = read(meta_path);
    const std::vector<int64_t> shape = ints_of(meta, "shape"), size = ints_of(meta, "original_size");
    std::string bytes = read(in_dir / (stem + ".u8"));
    const at::Tensor image =
        at::from_blob(bytes.data(), shape, at::kByte).clone();
    const auto start = std::chrono::steady_clock::now();
    const c10::Dict<c10::IValue, c10::IValue> out = model.forward({image, size[0], size[1]}).toGenericDict();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::ostringstream listing;
    listing << "{\"milliseconds\": " << ms;
    for (const auto& item : out) {
      const std::string name = item.key().toStringRef();
      const at::Tensor t = item.value().toTensor().contiguous();
      std::ofstream(out_dir / (stem + "." + name + ".bin"), std::ios::binary)
          .write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
      listing << ", \"" << name << "\": {\"type\": \"" << type_name(t.scalar_type()) << "\", \"dims\": [";
      for (int64_t d = 0; d < t.dim(); ++d) listing << (d ? ", " : "") << t.size(d);
      listing << "]}";
    }
    listing << "}";
    std::ofstream(out_dir / (stem + ".json")) << listing.str();
    std::cout << stem << ": ";
    if (out.contains("scores")) std::cout << out.at("scores").toTensor().size(0) << " detections, ";
    if (out.contains("segments_info"))
      std::cout << out.at("segments_info").toTensor().size(0) << " panoptic segments, ";
    std::cout << ms << " ms\n";
  }
  return 0;
}
