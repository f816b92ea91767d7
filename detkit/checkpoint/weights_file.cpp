#include "detkit/checkpoint/weights_file.h"

#include <spdlog/spdlog.h>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/checkpoint/unpickler.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "detkit/utils/strings.h"

namespace detkit::checkpoint {
namespace {

using namespace std::string_view_literals;

// A pickle of protocol 2 to 5 (what Python 2's HIGHEST_PROTOCOL and every Python 3 write),
// and not a legacy torch.save file (whose pickle starts with torch's magic number).
bool is_pickle(std::string_view bytes) {
  return bytes.size() >= 2 && bytes[0] == '\x80' && bytes[1] >= 2 && bytes[1] <= 5 &&
         !starts_with(bytes, "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"sv);
}

c10::optional<c10::IValue> entry(const c10::impl::GenericDict& dict, const char* key) {
  auto it = dict.find(c10::IValue(key));
  if (it == dict.end()) return c10::nullopt;
  return it->value();
}

// name -> tensor entries of `dict`; others are an error (Detectron2: "Unsupported type found in
// checkpoint!"), naming the entry.
TensorDict tensors_of(const c10::impl::GenericDict& dict, const std::string& path,
                      const std::string& where, bool drop_momentum) {
  TensorDict out;
  for (const auto& item : dict) {
    if (!item.key().isString())
      throw Error("'" + path + "': " + where + " has a key of type " + item.key().tagKind());
    const std::string& name = item.key().toStringRef();
    if (drop_momentum && name.size() >= 9 && name.compare(name.size() - 9, 9, "_momentum") == 0)
      continue;
    if (!item.value().isTensor())
      throw Error("'" + path + "': " + where + "['" + name + "'] is a " + item.value().tagKind() +
                  ", not an array");
    out[name] = item.value().toTensor();
  }
  return out;
}

WeightsFile read_pickle_weights(const std::string& bytes, const std::string& path) {
  WeightsFile file;
  file.path = path;
  file.content = load_pickle_bytes(bytes, path);
  if (!file.content.isGenericDict()) throw Error("'" + path + "' does not hold a dict");
  const c10::impl::GenericDict root = file.content.toGenericDict();
  const auto model = entry(root, "model");
  const auto author = entry(root, "__author__");
  if (model && author) {  // Detectron2 model zoo
    if (!model->isGenericDict()) throw Error("'" + path + "': 'model' is not a dict");
    file.format = WeightsFormat::kDetectron2Pickle;
    file.author = author->isString() ? author->toStringRef() : "";
    const auto heuristics = entry(root, "matching_heuristics");
    file.matching_heuristics = heuristics && heuristics->isBool() && heuristics->toBool();
    file.model = tensors_of(model->toGenericDict(), path, "model", false);
    spdlog::info("Reading a file from '{}'", file.author);
    return file;
  }
  // Caffe2 / Detectron1: detection models keep their blobs under "blobs", ImageNet ones do not.
  const auto blobs = entry(root, "blobs");
  if (blobs && !blobs->isGenericDict()) throw Error("'" + path + "': 'blobs' is not a dict");
  file.format = WeightsFormat::kCaffe2Pickle;
  file.author = "Caffe2";
  file.matching_heuristics = true;
  file.model = tensors_of(blobs ? blobs->toGenericDict() : root, path, blobs ? "blobs" : "the file",
                          /*drop_momentum=*/true);
  return file;
}

}  // namespace

c10::IValue load_pickle_bytes(std::string_view bytes, const std::string& path) {
  StorageLoader no_storages = [&](const std::string& key, at::ScalarType, int64_t) -> at::Tensor {
    throw Error("cannot read '" + path + "': the pickle refers to a torch storage ('" + key +
                "') outside it; a .pkl file holds its arrays itself");
  };
  return restricted_unpickle(bytes, no_storages, path);
}

WeightsFile read_weights_file(const std::string& path) {
  std::string bytes = read_file(path);
  if (is_pickle(bytes)) return read_pickle_weights(bytes, path);
  if (!bytes.empty() && bytes[0] != 'P' && bytes[0] != '\x80')
    throw Error("cannot read '" + path +
                "': neither a torch.save archive (.pth) nor a pickle of protocol 2 to 5 (.pkl)");
  WeightsFile file;
  file.path = path;
  file.content = load_torch_bytes(std::move(bytes), path);
  file.model = model_weights_from(file.content, path);
  return file;
}

}  // namespace detkit::checkpoint
