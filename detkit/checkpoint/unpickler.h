#pragma once
// A restricted unpickler for torch.save's data.pkl (pickle protocol 2). It builds values only:
// dicts (and OrderedDicts), lists, tuples, ints, floats, bools, None, strings and tensors. The
// only globals it accepts are collections.OrderedDict, torch._utils._rebuild_tensor_v2,
// torch._utils._rebuild_parameter, the torch.<Type>Storage classes and the type tags
// libtorch's pickle_save writes (torch.jit._pickle.restore_type_tag, build_*list), each of them
// implemented here; any other global is refused by name before anything else happens, so a
// file from a stranger cannot run code.
#include <ATen/core/ivalue.h>

#include <functional>
#include <string>
#include <string_view>

namespace detkit::checkpoint {

/// Returns a flat tensor of `numel` elements of `dtype` holding the archive's storage `key`.
using StorageLoader =
    std::function<at::Tensor(const std::string& key, at::ScalarType dtype, int64_t numel)>;

/// Runs `pickle` and returns the value it describes: dicts are c10 GenericDicts with str, int,
/// float or bool keys (OrderedDict attributes such as `_metadata` are dropped), lists are
/// GenericLists, tuples c10 Tuples. Tensors share storage as they did when saved. `source`
/// names the file in errors (detkit::Error).
c10::IValue restricted_unpickle(std::string_view pickle, const StorageLoader& load_storage,
                                const std::string& source);

}  // namespace detkit::checkpoint
