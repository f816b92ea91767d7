#pragma once
// The writing half of torch.save: a value tree pickled (protocol 2) exactly as Python's
// torch.save pickles dicts, lists, tuples, numbers, strings and tensors, with each tensor's
// storage referenced by key. Only collections.OrderedDict, torch._utils._rebuild_tensor_v2 and
// torch.<Type>Storage appear as globals, so restricted readers (torch.load(weights_only=True),
// detkit's own) accept the result.
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace detkit::checkpoint {

struct PickledValue {
  std::string pickle;                // data.pkl
  std::vector<at::Tensor> storages;  // storages[k] backs the record data/<k>
};

/// Pickles `value`: None, bool, int, float, str, dicts (str/int/float/bool keys), lists, tuples
/// and CPU tensors. Tensors sharing a storage share one record. Anything else throws
/// detkit::Error naming its type.
PickledValue pickle_value(const c10::IValue& value);

/// The bytes of a storage record: every byte of `storage_owner`'s storage.
std::string_view storage_bytes(const at::Tensor& storage_owner);

}  // namespace detkit::checkpoint
