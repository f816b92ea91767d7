#include "detkit/checkpoint/torch_file.h"

#include <ATen/ATen.h>

#include <cstring>

#include "detkit/checkpoint/pickler.h"
#include "detkit/checkpoint/unpickler.h"
#include "detkit/checkpoint/zip_archive.h"
#include "detkit/checkpoint/zip_writer.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "detkit/utils/strings.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "torch.save writes little-endian storages; this reader copies them as they are");

namespace detkit::checkpoint {
namespace {

// Refuses, with what to do instead, the files that are not torch.save's zip archives.
void check_format(const std::string& bytes, const std::string& path) {
  using namespace std::string_view_literals;
  if (starts_with(bytes, "PK\x03\x04"sv) || starts_with(bytes, "PK\x05\x06"sv)) return;
  // Legacy torch.save: a pickled magic number 0x1950a86a20f9469cfc6c comes first.
  if (starts_with(bytes, "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"sv))
    throw Error("cannot read '" + path +
                "': it uses the legacy torch.save format (PyTorch < 1.6 or "
                "_use_new_zipfile_serialization=False), which is not supported; re-save it "
                "with: python3 -c \"import torch; torch.save(torch.load('" +
                path + "'), '" + path + ".new')\"");
  if (starts_with(bytes, "\x80"sv))
    throw Error("cannot read '" + path +
                "' as a torch.save archive: it is a pickle (.pkl) file (Detectron2 model zoo, "
                "Caffe2 weights); read it with read_weights_file, as MODEL.WEIGHTS does");
  throw Error("cannot read '" + path +
              "': not a PyTorch checkpoint (expected the zip archive torch.save writes)");
}

// The folder holding data.pkl ("archive/"; Python names it after the file).
std::string record_prefix(const ZipArchive& zip) {
  for (const std::string& name : zip.names()) {
    const size_t slash = name.find('/');
    if (slash != std::string::npos && name.compare(slash, std::string::npos, "/data.pkl") == 0)
      return name.substr(0, slash + 1);
  }
  throw Error("cannot read '" + zip.source() + "': the archive holds no data.pkl");
}

}  // namespace

c10::IValue load_torch_file(const std::string& path) {
  return load_torch_bytes(read_file(path), path);
}

c10::IValue load_torch_bytes(std::string bytes, const std::string& path) {
  check_format(bytes, path);
  const ZipArchive zip(std::move(bytes), path);
  const std::string prefix = record_prefix(zip);
  if (zip.has(prefix + "byteorder") && zip.read(prefix + "byteorder") != "little")
    throw Error("cannot read '" + path + "': big-endian storages are not supported");
  StorageLoader load = [&](const std::string& key, at::ScalarType dtype, int64_t numel) {
    const std::string_view data = zip.read(prefix + "data/" + key);
    const size_t element = c10::elementSize(dtype);
    if (static_cast<uint64_t>(numel) > data.size() / element || data.size() != numel * element)
      throw Error("cannot read '" + path + "': storage '" + key + "' holds " +
                  std::to_string(data.size()) + " bytes, expected " + std::to_string(numel) +
                  " elements of " + std::to_string(element) + " bytes");
    at::Tensor flat = at::empty({numel}, at::TensorOptions().dtype(dtype));
    if (numel > 0) std::memcpy(flat.data_ptr(), data.data(), data.size());
    return flat;
  };
  return restricted_unpickle(zip.read(prefix + "data.pkl"), load, path);
}

c10::impl::GenericDict make_dict() {
  return c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get());
}

c10::IValue detached_cpu_copy(const c10::IValue& value) {
  if (value.isTensor()) {
    at::Tensor t = value.toTensor().detach().cpu();
    // A view saves its whole storage: keep only the viewed elements.
    if (t.storage().nbytes() != static_cast<size_t>(t.numel()) * t.element_size()) t = t.clone();
    return t;
  }
  if (value.isGenericDict()) {
    const c10::impl::GenericDict dict = value.toGenericDict();
    c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
    for (const auto& entry : dict) copy.insert(entry.key(), detached_cpu_copy(entry.value()));
    return copy;
  }
  if (value.isList()) {
    const c10::List<c10::IValue> list = value.toList();
    c10::impl::GenericList copy(list.elementType());
    for (const c10::IValue& item : list) copy.push_back(detached_cpu_copy(item));
    return copy;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> items;
    for (const c10::IValue& item : value.toTupleRef().elements())
      items.push_back(detached_cpu_copy(item));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  return value;
}

std::string torch_file_bytes(const c10::IValue& value) {
  const PickledValue pickled = pickle_value(detached_cpu_copy(value));
  ZipWriter zip;
  zip.add("archive/data.pkl", pickled.pickle);
  for (size_t key = 0; key < pickled.storages.size(); ++key)
    zip.add("archive/data/" + std::to_string(key), storage_bytes(pickled.storages[key]));
  zip.add("archive/version", "3\n");
  return zip.finish();
}

void save_torch_file(const std::string& path, const c10::IValue& value) {
  atomic_write(path, torch_file_bytes(value));
}

}  // namespace detkit::checkpoint
