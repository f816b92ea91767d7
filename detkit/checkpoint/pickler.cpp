#include "detkit/checkpoint/pickler.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <utility>

#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

const char* storage_type(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return "FloatStorage";
    case at::kDouble:
      return "DoubleStorage";
    case at::kHalf:
      return "HalfStorage";
    case at::kBFloat16:
      return "BFloat16Storage";
    case at::kLong:
      return "LongStorage";
    case at::kInt:
      return "IntStorage";
    case at::kShort:
      return "ShortStorage";
    case at::kChar:
      return "CharStorage";
    case at::kByte:
      return "ByteStorage";
    case at::kBool:
      return "BoolStorage";
    default:
      return nullptr;
  }
}

class Pickler {
 public:
  PickledValue run(const c10::IValue& value) {
    out_ += "\x80\x02";  // PROTO 2
    push(value);
    out_ += '.';  // STOP
    return {std::move(out_), std::move(storages_)};
  }

 private:
  void push(const c10::IValue& value);
  void push_int(int64_t value);
  void push_double(double value);
  void push_string(const std::string& text);
  void push_tensor(const at::Tensor& tensor);
  void push_int_tuple(at::IntArrayRef values);
  void put_le(uint64_t value, int width) {
    for (int i = 0; i < width; ++i) out_ += static_cast<char>((value >> (8 * i)) & 0xFF);
  }

  std::string out_;
  std::vector<at::Tensor> storages_;
  std::map<std::pair<const void*, at::ScalarType>, size_t> storage_keys_;
};

void Pickler::push(const c10::IValue& value) {
  if (value.isNone()) {
    out_ += 'N';
  } else if (value.isBool()) {
    out_ += value.toBool() ? '\x88' : '\x89';
  } else if (value.isInt()) {
    push_int(value.toInt());
  } else if (value.isDouble()) {
    push_double(value.toDouble());
  } else if (value.isString()) {
    push_string(value.toStringRef());
  } else if (value.isTensor()) {
    push_tensor(value.toTensor());
  } else if (value.isGenericDict()) {
    const c10::impl::GenericDict dict = value.toGenericDict();
    out_ += '}';
    if (dict.empty()) return;
    out_ += '(';
    for (const auto& entry : dict) {
      const c10::IValue& key = entry.key();
      if (!key.isString() && !key.isInt() && !key.isDouble() && !key.isBool())
        throw Error("cannot save a dict key of type " + key.tagKind() + " in a checkpoint");
      push(key);
      push(entry.value());
    }
    out_ += 'u';  // SETITEMS
  } else if (value.isList()) {
    out_ += ']';
    const c10::List<c10::IValue> list = value.toList();
    if (list.empty()) return;
    out_ += '(';
    for (const c10::IValue& item : list) push(item);
    out_ += 'e';  // APPENDS
  } else if (value.isTuple()) {
    const auto& items = value.toTupleRef().elements();
    if (items.empty()) {
      out_ += ')';
    } else if (items.size() <= 3) {
      for (const c10::IValue& item : items) push(item);
      out_ += static_cast<char>(0x85 + items.size() - 1);  // TUPLE1..3
    } else {
      out_ += '(';
      for (const c10::IValue& item : items) push(item);
      out_ += 't';
    }
  } else {
    throw Error("cannot save a value of type " + value.tagKind() + " in a checkpoint");
  }
}

void Pickler::push_int(int64_t value) {
  if (value >= 0 && value < 256) {
    out_ += 'K';
    put_le(value, 1);
  } else if (value >= 0 && value < 65536) {
    out_ += 'M';
    put_le(value, 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    out_ += 'J';
    put_le(static_cast<uint32_t>(static_cast<int32_t>(value)), 4);
  } else {  // LONG1: minimal two's complement, little-endian
    const uint64_t bits = static_cast<uint64_t>(value);
    int width = 8;
    while (width > 1) {
      const uint8_t top = (bits >> (8 * (width - 1))) & 0xFF;
      const bool next_negative = (bits >> (8 * (width - 1) - 1)) & 1;
      if (!((top == 0x00 && !next_negative) || (top == 0xFF && next_negative))) break;
      --width;
    }
    out_ += '\x8a';
    out_ += static_cast<char>(width);
    put_le(bits, width);
  }
}

void Pickler::push_double(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  out_ += 'G';
  for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xFF);
}

void Pickler::push_string(const std::string& text) {
  if (text.size() > UINT32_MAX) throw Error("cannot save a string of 4 GiB in a checkpoint");
  out_ += 'X';
  put_le(text.size(), 4);
  out_ += text;
}

void Pickler::push_int_tuple(at::IntArrayRef values) {
  out_ += '(';
  for (int64_t v : values) push_int(v);
  out_ += 't';
}

void Pickler::push_tensor(const at::Tensor& tensor) {
  const char* type = storage_type(tensor.scalar_type());
  if (type == nullptr)
    throw Error(std::string("cannot save a tensor of type ") + c10::toString(tensor.scalar_type()) +
                " in a checkpoint");
  if (!tensor.device().is_cpu() || tensor.layout() != at::kStrided || tensor.is_quantized())
    throw Error("cannot save a tensor that is not a dense CPU tensor in a checkpoint");
  const size_t element = tensor.element_size();
  const size_t nbytes = tensor.storage().nbytes();
  if (nbytes % element != 0) throw Error("cannot save a tensor whose storage has another type");
  const auto id = std::make_pair(tensor.storage().unsafeGetStorageImpl(), tensor.scalar_type());
  auto [it, added] = storage_keys_.emplace(id, storages_.size());
  if (added) storages_.push_back(tensor);
  // _rebuild_tensor_v2(('storage', torch.<T>Storage, key, 'cpu', numel) persistent id,
  //                    offset, size, stride, requires_grad, OrderedDict()) as torch.save writes.
  out_ += "ctorch._utils\n_rebuild_tensor_v2\n((";
  push_string("storage");
  out_ += std::string("ctorch\n") + type + "\n";
  push_string(std::to_string(it->second));
  push_string("cpu");
  push_int(static_cast<int64_t>(nbytes / element));
  out_ += "tQ";  // TUPLE, BINPERSID
  push_int(tensor.storage_offset());
  push_int_tuple(tensor.sizes());
  push_int_tuple(tensor.strides());
  out_ += "\x89";  // requires_grad False
  out_ += "ccollections\nOrderedDict\n)R";
  out_ += "tR";
}

}  // namespace

PickledValue pickle_value(const c10::IValue& value) { return Pickler().run(value); }

std::string_view storage_bytes(const at::Tensor& storage_owner) {
  const c10::Storage& storage = storage_owner.storage();
  return {static_cast<const char*>(storage.data()), storage.nbytes()};
}

}  // namespace detkit::checkpoint
