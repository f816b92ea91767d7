#include "detkit/checkpoint/numpy_array.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

constexpr size_t kMaxDims = 64;  // numpy 2's NPY_MAXDIMS

bool is_none(const c10::IValue& v) { return v.isNone(); }

}  // namespace

NumpyDtype numpy_dtype(const std::string& descr) {
  static const std::map<std::string, std::pair<at::ScalarType, size_t>> types = {
      {"b1", {at::kBool, 1}},  {"i1", {at::kChar, 1}},  {"u1", {at::kByte, 1}},
      {"i2", {at::kShort, 2}}, {"i4", {at::kInt, 4}},   {"i8", {at::kLong, 8}},
      {"f2", {at::kHalf, 2}},  {"f4", {at::kFloat, 4}}, {"f8", {at::kDouble, 8}}};
  NumpyDtype dtype;
  dtype.descr = descr;
  std::string code = descr;
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '=' || code[0] == '|')) {
    dtype.big_endian = code[0] == '>';
    code = code.substr(1);
  }
  auto it = types.find(code);
  if (it == types.end())
    throw Error("numpy dtype '" + descr +
                "' has no torch equivalent (bool, int8/16/32/64, uint8 and float16/32/64 are "
                "read)");
  dtype.type = it->second.first;
  dtype.item_size = it->second.second;
  return dtype;
}

void set_numpy_dtype_state(NumpyDtype& dtype, const std::vector<c10::IValue>& state) {
  // (3, '<', None, None, None, -1, -1, 0) and numpy >= 1.x's version 4 with metadata appended.
  if (state.size() < 8 || !state[0].isInt() || !state[1].isString())
    throw Error("numpy dtype '" + dtype.descr + "': unexpected pickled state");
  if (!is_none(state[2]) || !is_none(state[3]) || !is_none(state[4]))
    throw Error("numpy dtype '" + dtype.descr + "': structured and sub-array dtypes are not read");
  const std::string& order = state[1].toStringRef();
  if (order != "<" && order != ">" && order != "=" && order != "|")
    throw Error("numpy dtype '" + dtype.descr + "': unknown byte order '" + order + "'");
  dtype.big_endian = order == ">";
}

at::Tensor numpy_array(std::string_view bytes, const NumpyDtype& dtype,
                       const std::vector<int64_t>& shape, bool fortran) {
  if (shape.size() > kMaxDims)
    throw Error("a numpy array with " + std::to_string(shape.size()) + " dimensions");
  int64_t numel = 1;
  for (int64_t size : shape) {
    if (size < 0) throw Error("a numpy array with a negative dimension");
    if (__builtin_mul_overflow(numel, size, &numel))
      throw Error("a numpy array whose shape overflows");
  }
  uint64_t expected = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(numel), dtype.item_size, &expected) ||
      expected != bytes.size())
    throw Error("a numpy array of shape " + c10::str(c10::IntArrayRef(shape)) + " and dtype '" +
                dtype.descr + "' needs " + std::to_string(numel) + " x " +
                std::to_string(dtype.item_size) + " bytes, the pickle holds " +
                std::to_string(bytes.size()));
  std::vector<int64_t> stored(shape);  // the order the bytes are in
  if (fortran) std::reverse(stored.begin(), stored.end());
  at::Tensor out = at::empty(stored, at::TensorOptions().dtype(dtype.type));
  if (numel > 0) std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
  if (dtype.big_endian && dtype.item_size > 1) {
    auto* data = static_cast<uint8_t*>(out.data_ptr());
    for (int64_t i = 0; i < numel; ++i)
      std::reverse(data + i * dtype.item_size, data + (i + 1) * dtype.item_size);
  }
  if (!fortran) return out;
  std::vector<int64_t> reverse_dims(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    reverse_dims[d] = static_cast<int64_t>(shape.size() - 1 - d);
  return out.permute(reverse_dims).contiguous();
}

std::string latin1_bytes(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size());
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<uint8_t>(utf8[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c == 0xc2 || c == 0xc3) && i + 1 < utf8.size()) {
      out.push_back(
          static_cast<char>(((c & 0x03) << 6) | (static_cast<uint8_t>(utf8[++i]) & 0x3f)));
    } else {
      throw Error("a latin-1 byte string holds a character above U+00FF");
    }
  }
  return out;
}

std::string latin1_to_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char ch : bytes) {
    const auto c = static_cast<uint8_t>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {
      out.push_back(static_cast<char>(0xc0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
  }
  return out;
}

}  // namespace detkit::checkpoint
