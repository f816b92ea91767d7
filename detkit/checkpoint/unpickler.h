#pragma once
// A restricted unpickler for torch.save's data.pkl and for numpy .pkl files (Detectron2 model zoo,
// Caffe2/Detectron1 weights written by Python 2), pickle protocols 2 to 5. It builds values
// only: dicts (and OrderedDicts), lists, tuples, ints, floats, bools, None, strings, bytes and
// tensors (numpy arrays become tensors). The only globals it accepts are
// collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, the
// torch.<Type>Storage classes, the type tags libtorch's pickle_save writes
// (torch.jit._pickle.restore_type_tag, build_*list), numpy's array and dtype reconstructors
// (numpy[._]core.multiarray._reconstruct and scalar, numpy[._]core.numeric._frombuffer,
// numpy.ndarray, numpy.dtype) and protocol 2's bytes (_codecs.encode(text, 'latin1'),
// bytes()), each of them implemented here; any other global is refused by name before anything
// else happens, so a file from a stranger cannot run code. Sizes are checked against the bytes
// the pickle holds before anything is allocated.
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
/// GenericLists, tuples c10 Tuples, bytes strings (Python 2 str: their latin-1 text as UTF-8).
/// Tensors share storage as they did when saved; numpy arrays are contiguous copies. `source`
/// names the file in errors (detkit::Error).
c10::IValue restricted_unpickle(std::string_view pickle, const StorageLoader& load_storage,
                                const std::string& source);

}  // namespace detkit::checkpoint
