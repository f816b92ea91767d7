#pragma once
// PyTorch checkpoint files: reading what Python's torch.save writes (the zip format of PyTorch
// >= 1.6) with the restricted unpickler, and writing files Python's torch.load reads.
#include <ATen/core/ivalue.h>

#include <string>

namespace detkit::checkpoint {

/// Reads `path` into a value tree (see restricted_unpickle): tensors on the CPU, dicts, lists,
/// tuples, numbers, strings, None. Refuses, naming the file: legacy (pre-1.6) torch.save files,
/// pickle .pkl files (weights_file.h reads those), compressed or corrupt archives, and any
/// global other than tensors and OrderedDict.
c10::IValue load_torch_file(const std::string& path);

/// load_torch_file on the bytes of a file already read; `path` names it in errors.
c10::IValue load_torch_bytes(std::string bytes, const std::string& path);

/// Writes `value` so that torch.load(path) returns it: dicts with str/int/float/bool keys,
/// lists, tuples, numbers, strings, None and tensors (saved detached, on the CPU; views only
/// with the elements they show). The file is written beside `path`, flushed and renamed over
/// it: readers see the old file or the new one.
void save_torch_file(const std::string& path, const c10::IValue& value);

/// The bytes save_torch_file writes: torch.save's zip layout (archive/data.pkl, archive/data/<k>,
/// archive/version) around pickle_value(detached_cpu_copy(value)).
std::string torch_file_bytes(const c10::IValue& value);

/// An empty dict for checkpoint trees (optimizer and scheduler state): any keys, any values.
c10::impl::GenericDict make_dict();

/// `value` with every tensor detached and moved to the CPU, and dicts/lists/tuples copied.
c10::IValue detached_cpu_copy(const c10::IValue& value);

}  // namespace detkit::checkpoint
