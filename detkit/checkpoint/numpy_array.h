#pragma once
// numpy's ndarray pickle state made into tensors: dtype descriptors ('<f4', '|u1', '>i8'), raw
// buffers in C or Fortran order, either byte order. The restricted unpickler calls these while
// reading Detectron2 model-zoo and Caffe2 .pkl files.
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <string_view>
#include <vector>

namespace detkit::checkpoint {

/// A numpy dtype that maps onto a torch type: bool, int8/16/32/64, uint8, float16/32/64.
struct NumpyDtype {
  std::string descr;  // numpy's type string, e.g. "f4"
  at::ScalarType type = at::kFloat;
  size_t item_size = 4;
  bool big_endian = false;
};

/// numpy.dtype(descr, align, copy): `descr` is "f4", "<f4", "float32"-style kind+size codes
/// only. Throws detkit::Error naming the descriptor for structured, object, string, unsigned
/// 16/32/64-bit or other types torch cannot hold.
NumpyDtype numpy_dtype(const std::string& descr);

/// Applies numpy.dtype.__setstate__'s tuple (version, byteorder, subarray, names, fields,
/// elsize, alignment, flags[, metadata]) for a plain dtype: only the byte order ('<', '>',
/// '=', '|') changes it; sub-arrays and fields are refused.
void set_numpy_dtype_state(NumpyDtype& dtype, const std::vector<c10::IValue>& state);

/// A contiguous tensor of `shape` holding `bytes` read as `dtype` in C order (or Fortran order
/// when `fortran`), byte-swapped when the dtype is big-endian. Throws when the shape is
/// negative or overflows, or bytes.size() != prod(shape) * item size.
at::Tensor numpy_array(std::string_view bytes, const NumpyDtype& dtype,
                       const std::vector<int64_t>& shape, bool fortran);

/// The bytes a latin-1 `text` encodes (the Python str holds code points 0..255, here as UTF-8):
/// what `_codecs.encode(text, 'latin1')` returns. Throws for a code point above 255.
std::string latin1_bytes(std::string_view utf8);

/// The UTF-8 text of latin-1 `bytes` (how Python 3 reads Python 2 str with encoding='latin1').
std::string latin1_to_utf8(std::string_view bytes);

}  // namespace detkit::checkpoint
