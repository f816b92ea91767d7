#include "detkit/checkpoint/unpickler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "detkit/checkpoint/numpy_array.h"
#include "detkit/utils/error.h"

namespace detkit::checkpoint {
namespace {

// The opcodes torch.save (protocol 2) and libtorch's pickler emit, plus their simple relatives.
enum Op : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kDup = '2',
  kBinBytes = 'B',
  kShortBinBytes = 'C',
  kBinFloat = 'G',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinPersId = 'Q',
  kReduce = 'R',
  kBinString = 'T',
  kShortBinString = 'U',
  kBinUnicode = 'X',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kAppends = 'e',
  kBinGet = 'h',
  kInst = 'i',
  kLongBinGet = 'j',
  kList = 'l',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kSetItems = 'u',
  kEmptyDict = '}',
  kEmptyList = ']',
  kEmptyTuple = ')',
  kProto = 0x80,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kLong4 = 0x8b,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kBinBytes8 = 0x8e,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
  kByteArray8 = 0x96,
  kNextBuffer = 0x97,
  kReadOnlyBuffer = 0x98,
};

// kTypeTag: torch.jit._pickle's restore_type_tag and build_*list, which libtorch's
// torch::pickle_save wraps around dicts and lists; each returns its first argument.
// The torch kinds come first (on_reduce relies on it). The numpy kinds:
// numpy.core.multiarray._reconstruct (with numpy.ndarray as its first argument,
// then BUILD with the array's state), numpy.core.numeric._frombuffer (protocol 5), numpy.dtype
// (then BUILD with its state), numpy.core.multiarray.scalar; numpy 2 spells numpy.core
// numpy._core. _codecs.encode(text, 'latin1') and bytes() are how protocol 2 writes bytes.
enum class GlobalKind {
  kOrderedDict,
  kRebuildTensor,
  kRebuildParameter,
  kStorage,
  kTypeTag,
  kNumpyReconstruct,
  kNumpyNdarray,
  kNumpyDtype,
  kNumpyFromBuffer,
  kNumpyScalar,
  kCodecsEncode,
  kBytes
};
struct Global {
  GlobalKind kind;
  std::string name;  // "torch.FloatStorage"
  at::ScalarType dtype = at::kFloat;
};
// ('storage', torch.<T>Storage, key, location, numel): what BINPERSID turns into a storage.
struct PersistentId {
  std::string key;
  at::ScalarType dtype;
  int64_t numel;
};
// Python bytes (or, with latin1_text, a Python 2 str: text when used as data, raw bytes as a
// numpy buffer); shared because the memo holds copies.
struct Bytes {
  std::shared_ptr<const std::string> data;
  bool latin1_text = false;
};
// What _reconstruct returns: an array waiting for BUILD to give it its state.
struct PendingArray {
  std::optional<at::Tensor> tensor;
};
struct ArgTuple;  // a tuple holding something that is not (yet) plain data: a dtype, bytes
using Item = std::variant<c10::IValue, Global, PersistentId, Bytes, std::shared_ptr<NumpyDtype>,
                          std::shared_ptr<PendingArray>, std::shared_ptr<const ArgTuple>>;
struct ArgTuple {
  std::vector<Item> items;
  size_t depth = 1;  // 1 + the deepest ArgTuple among its items
};

// Deepest nesting of containers a pickle may hold (torch's and Detectron2's files nest < 10).
// Deeper ones, and containers that hold themselves, would overflow the stack or leak when
// destroyed; they are refused.
constexpr size_t kMaxNesting = 1000;

// Most entries the unpickler keeps in its stack, its marks, its memo and its list of containers.
// Each costs tens of bytes for one or two bytes of pickle, so without a bound a file could ask for
// tens of times its size; torch's and Detectron2's files stay below a few thousand of each.
constexpr size_t kMaxEntries = 1000000;

bool is_container(const c10::IValue& v) { return v.isList() || v.isGenericDict() || v.isTuple(); }

// Calls f on every value directly inside container `v`.
template <typename F>
void for_each_child(const c10::IValue& v, F&& f) {
  if (v.isList()) {
    for (const c10::IValue e : v.toList()) f(e);
  } else if (v.isGenericDict()) {
    for (const auto& kv : v.toGenericDict()) f(kv.key()), f(kv.value());
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTuple()->elements()) f(e);
  }
}

// Whether `root` nests containers deeper than kMaxNesting (a container that holds itself has no
// end); `reached` gets every container it holds. Iterative; a container is looked at again only
// when reached at a greater depth.
bool nests_too_deep(const c10::IValue& root, std::unordered_set<const void*>& reached) {
  std::vector<std::pair<c10::IValue, size_t>> work{{root, 1}};
  std::unordered_map<const void*, size_t> deepest;
  while (!work.empty()) {
    const c10::IValue v = std::move(work.back().first);
    const size_t depth = work.back().second;
    work.pop_back();
    if (!is_container(v)) continue;
    if (depth > kMaxNesting) return true;
    size_t& seen = deepest[v.internalToPointer()];
    if (seen >= depth) continue;
    seen = depth;
    reached.insert(v.internalToPointer());
    for_each_child(v, [&](const c10::IValue& c) { work.emplace_back(c, depth + 1); });
  }
  return false;
}

// Empties the containers reachable from `work`, except those in `keep` (the result's), one at a
// time, so that none is destroyed recursively and no reference cycle outlives the unpickler.
void dismantle(std::vector<c10::IValue> work, const std::unordered_set<const void*>& keep) {
  std::unordered_set<const void*> done;
  while (!work.empty()) {
    c10::IValue v = std::move(work.back());
    work.pop_back();
    if (!is_container(v) || keep.count(v.internalToPointer()) ||
        !done.insert(v.internalToPointer()).second)
      continue;
    for_each_child(v, [&](const c10::IValue& c) {
      if (is_container(c)) work.push_back(c);
    });
    if (v.isList()) {
      v.toList().clear();
    } else if (v.isGenericDict()) {
      v.toGenericDict().clear();
    } else {
      auto tuple = v.toTuple();
      for (size_t i = 0; i < tuple->elements().size(); ++i)
        tuple->unsafeSetElement(i, c10::IValue());
    }
  }
}

std::optional<Global> allowed_global(const std::string& module, const std::string& name) {
  static const std::map<std::string, at::ScalarType> storages = {
      {"FloatStorage", at::kFloat}, {"DoubleStorage", at::kDouble},
      {"HalfStorage", at::kHalf},   {"BFloat16Storage", at::kBFloat16},
      {"LongStorage", at::kLong},   {"IntStorage", at::kInt},
      {"ShortStorage", at::kShort}, {"CharStorage", at::kChar},
      {"ByteStorage", at::kByte},   {"BoolStorage", at::kBool}};
  const std::string full = module + "." + name;
  if (full == "collections.OrderedDict") return Global{GlobalKind::kOrderedDict, full};
  if (full == "torch._utils._rebuild_tensor_v2") return Global{GlobalKind::kRebuildTensor, full};
  if (full == "torch._utils._rebuild_parameter") return Global{GlobalKind::kRebuildParameter, full};
  if (module == "torch.jit._pickle" &&
      (name == "restore_type_tag" || name == "build_intlist" || name == "build_doublelist" ||
       name == "build_boollist" || name == "build_tensorlist"))
    return Global{GlobalKind::kTypeTag, full};
  const bool multiarray = module == "numpy.core.multiarray" || module == "numpy._core.multiarray";
  if (multiarray && name == "_reconstruct") return Global{GlobalKind::kNumpyReconstruct, full};
  if (multiarray && name == "scalar") return Global{GlobalKind::kNumpyScalar, full};
  if ((module == "numpy.core.numeric" || module == "numpy._core.numeric") && name == "_frombuffer")
    return Global{GlobalKind::kNumpyFromBuffer, full};
  if (full == "numpy.ndarray") return Global{GlobalKind::kNumpyNdarray, full};
  if (full == "numpy.dtype") return Global{GlobalKind::kNumpyDtype, full};
  if (full == "_codecs.encode") return Global{GlobalKind::kCodecsEncode, full};
  if (full == "__builtin__.bytes" || full == "builtins.bytes")
    return Global{GlobalKind::kBytes, full};
  auto it = storages.find(name);
  if (module == "torch" && it != storages.end())
    return Global{GlobalKind::kStorage, full, it->second};
  return std::nullopt;
}

c10::impl::GenericDict new_dict() {
  return c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get());
}

class Unpickler {
 public:
  Unpickler(std::string_view data, const StorageLoader& load, const std::string& source)
      : data_(data), load_(load), source_(source) {}
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;
  // Every container the pickle built, apart from the result's, is emptied one at a time: none
  // is destroyed recursively and no reference cycle outlives the unpickler, whatever was popped
  // into a local before an error.
  ~Unpickler() {
    stack_.clear();
    memo_.clear();
    dismantle(std::move(containers_), result_containers_);
  }

  c10::IValue run() {
    while (true) {
      const size_t at = pos_;
      const uint8_t op = byte();
      if (op == kStop) break;
      step(op, at);
    }
    if (stack_.empty()) fail("the pickle ends without a value");
    c10::IValue result = as_value(stack_.back());
    std::unordered_set<const void*> reached;
    if (nests_too_deep(result, reached))
      fail("containers nested deeper than " + std::to_string(kMaxNesting) +
           " levels, or one that holds itself");
    result_containers_ = std::move(reached);
    return result;
  }

 private:
  void step(uint8_t op, size_t at);
  void on_global(const std::string& module, const std::string& name);
  void on_reduce();
  void on_build();
  void on_persid();
  void make_tuple(std::vector<Item> items);
  void set_items(std::vector<Item> items);
  void append_items(std::vector<Item> items);
  c10::IValue rebuild_tensor(const std::vector<c10::IValue>& args);
  c10::IValue make_ordered_dict(const std::vector<c10::IValue>& args);
  Item reduce_numpy(const Global& global, const std::vector<Item>& args);
  void build_array(PendingArray& array, const std::vector<Item>& state);
  std::vector<Item> tuple_items(const Item& item) const;
  std::string_view buffer_of(const Item& item, std::string* scratch) const;
  std::shared_ptr<NumpyDtype> dtype_of(const Item& item) const;
  std::vector<int64_t> shape_of(const Item& item) const;
  // Runs a numpy helper, turning its error into one that names the file and the byte.
  template <typename F>
  auto numpy(F&& f) const {
    try {
      return f();
    } catch (const Error& e) {
      fail(e.what());
    }
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("cannot read '" + source_ + "': " + what + " (pickle byte " + std::to_string(pos_) +
                ")");
  }
  std::string_view take(uint64_t n) {
    if (n > data_.size() - pos_) fail("truncated pickle");
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  uint8_t byte() { return static_cast<uint8_t>(take(1)[0]); }
  uint64_t little_endian(int width) {
    std::string_view b = take(width);
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(b[i]);
    return value;
  }
  std::string line() {
    size_t end = data_.find('\n', pos_);
    if (end == std::string_view::npos) fail("truncated pickle");
    std::string out(data_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  int64_t long_value(std::string_view b) {
    if (b.size() > 8) fail("an integer wider than 64 bits");
    if (b.empty()) return 0;
    uint64_t value = 0;
    for (size_t i = b.size(); i-- > 0;) value = (value << 8) | static_cast<uint8_t>(b[i]);
    const int bits = static_cast<int>(b.size()) * 8;
    if (bits < 64 && (value >> (bits - 1)) & 1) value |= ~uint64_t{0} << bits;  // sign-extend
    return static_cast<int64_t>(value);
  }
  double big_endian_double() {
    std::string_view b = take(8);
    uint64_t bits = 0;
    for (char c : b) bits = (bits << 8) | static_cast<uint8_t>(c);
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }

  void push(Item item) {
    // Every container the pickle builds passes here first: remembered for the teardown.
    if (auto* v = std::get_if<c10::IValue>(&item))
      if (is_container(*v) && tracked_.insert(v->internalToPointer()).second) {
        check_bound(containers_.size(), "containers");
        containers_.push_back(*v);
      }
    check_bound(stack_.size(), "values on the stack");
    stack_.push_back(std::move(item));
  }
  void check_bound(size_t size, const char* what) const {
    if (size >= kMaxEntries)
      fail(std::string("more than ") + std::to_string(kMaxEntries) + " " + what +
           "; refused (no checkpoint needs as many)");
  }
  Item pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("pickle stack underflow");
    Item item = std::move(stack_.back());
    stack_.pop_back();
    return item;
  }
  c10::IValue as_value(const Item& item) const {
    if (auto* g = std::get_if<Global>(&item)) fail("'" + g->name + "' used as data");
    if (std::holds_alternative<PersistentId>(item)) fail("a storage reference used as data");
    if (std::holds_alternative<std::shared_ptr<NumpyDtype>>(item))
      fail("a numpy dtype used as data");
    if (auto* b = std::get_if<Bytes>(&item))
      return c10::IValue(b->latin1_text ? latin1_to_utf8(*b->data) : *b->data);
    if (auto* a = std::get_if<std::shared_ptr<PendingArray>>(&item)) {
      if (!(*a)->tensor) fail("a numpy array used before its state was set");
      return c10::IValue(*(*a)->tensor);
    }
    if (auto* t = std::get_if<std::shared_ptr<const ArgTuple>>(&item)) {
      std::vector<c10::IValue> values;
      for (const Item& element : (*t)->items) values.push_back(as_value(element));
      return c10::IValue(c10::ivalue::Tuple::create(std::move(values)));
    }
    return std::get<c10::IValue>(item);
  }
  c10::IValue pop_value() { return as_value(pop()); }
  std::vector<Item> pop_to_mark() {
    if (marks_.empty()) fail("pickle MARK missing");
    std::vector<Item> items(std::make_move_iterator(stack_.begin() + marks_.back()),
                            std::make_move_iterator(stack_.end()));
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  Item& top() {
    if (stack_.empty()) fail("pickle stack underflow");
    return stack_.back();
  }
  c10::IValue& top_value() {
    auto* value = std::get_if<c10::IValue>(&top());
    if (value == nullptr) fail("a global used as a container");
    return *value;
  }
  void memo_put(uint64_t index) {
    if (stack_.empty()) fail("pickle stack underflow");
    if (!memo_.count(index)) check_bound(memo_.size(), "memo entries");
    memo_[index] = stack_.back();
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("pickle memo " + std::to_string(index) + " is not set");
    push(it->second);
  }
  void push_bytes(std::string_view data, bool latin1_text) {
    push(Bytes{std::make_shared<const std::string>(data), latin1_text});
  }
  std::string pop_string() {
    c10::IValue value = pop_value();
    if (!value.isString()) fail("STACK_GLOBAL needs strings");
    return value.toStringRef();
  }

  std::string_view data_;
  size_t pos_ = 0;
  const StorageLoader& load_;
  const std::string& source_;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Item> memo_;
  // The containers of the value run() returned (empty until then): the destructor keeps them.
  std::unordered_set<const void*> result_containers_;
  std::vector<c10::IValue> containers_;      // every container pushed, once
  std::unordered_set<const void*> tracked_;  // their addresses
  std::map<std::string, at::Tensor> storages_;
};

void Unpickler::step(uint8_t op, size_t at) {
  switch (op) {
    case kProto:
      byte();
      break;
    case kFrame:
      little_endian(8);
      break;
    case kMark:
      check_bound(marks_.size(), "open marks");
      marks_.push_back(stack_.size());
      break;
    case kPop:
      pop();
      break;
    case kPopMark:
      pop_to_mark();
      break;
    case kDup:
      if (stack_.empty()) fail("pickle stack underflow");
      push(stack_.back());
      break;
    case kNone:
      push(c10::IValue());
      break;
    case kNewTrue:
      push(c10::IValue(true));
      break;
    case kNewFalse:
      push(c10::IValue(false));
      break;
    case kBinInt:
      push(c10::IValue(int64_t{static_cast<int32_t>(little_endian(4))}));
      break;
    case kBinInt1:
      push(c10::IValue(static_cast<int64_t>(little_endian(1))));
      break;
    case kBinInt2:
      push(c10::IValue(static_cast<int64_t>(little_endian(2))));
      break;
    case kLong1:
      push(c10::IValue(long_value(take(byte()))));
      break;
    case kLong4:
      push(c10::IValue(long_value(take(little_endian(4)))));
      break;
    case kBinFloat:
      push(c10::IValue(big_endian_double()));
      break;
    case kShortBinUnicode:
      push(c10::IValue(std::string(take(byte()))));
      break;
    case kBinUnicode:
      push(c10::IValue(std::string(take(little_endian(4)))));
      break;
    case kBinUnicode8:
      push(c10::IValue(std::string(take(little_endian(8)))));
      break;
    case kShortBinBytes:
      push_bytes(take(byte()), false);
      break;
    case kBinBytes:
      push_bytes(take(little_endian(4)), false);
      break;
    case kBinBytes8:
    case kByteArray8:
      push_bytes(take(little_endian(8)), false);
      break;
    case kShortBinString:
      push_bytes(take(byte()), true);
      break;
    case kBinString: {
      const auto size = static_cast<int32_t>(little_endian(4));
      if (size < 0) fail("BINSTRING with a negative length");
      push_bytes(take(static_cast<uint64_t>(size)), true);
      break;
    }
    case kNextBuffer:
    case kReadOnlyBuffer:
      pos_ = at;
      fail("out-of-band buffers (pickle protocol 5's NEXT_BUFFER) are not supported");
    case kEmptyDict:
      push(c10::IValue(new_dict()));
      break;
    case kEmptyList:
      push(c10::IValue(c10::impl::GenericList(c10::AnyType::get())));
      break;
    case kEmptyTuple:
      push(c10::IValue(c10::ivalue::Tuple::create(std::vector<c10::IValue>{})));
      break;
    case kTuple:
      make_tuple(pop_to_mark());
      break;
    case kTuple1:
    case kTuple2:
    case kTuple3: {
      std::vector<Item> items(op - kTuple1 + 1);
      for (size_t i = items.size(); i-- > 0;) items[i] = pop();
      make_tuple(std::move(items));
      break;
    }
    case kList: {
      std::vector<Item> items = pop_to_mark();
      push(c10::IValue(c10::impl::GenericList(c10::AnyType::get())));
      append_items(std::move(items));
      break;
    }
    case kDict: {
      std::vector<Item> items = pop_to_mark();
      push(c10::IValue(new_dict()));
      set_items(std::move(items));
      break;
    }
    case kAppend: {
      std::vector<Item> items;
      items.push_back(pop());
      append_items(std::move(items));
      break;
    }
    case kAppends:
      append_items(pop_to_mark());
      break;
    case kSetItem: {
      std::vector<Item> items(2);
      items[1] = pop();
      items[0] = pop();
      set_items(std::move(items));
      break;
    }
    case kSetItems:
      set_items(pop_to_mark());
      break;
    case kBinPut:
      memo_put(little_endian(1));
      break;
    case kLongBinPut:
      memo_put(little_endian(4));
      break;
    case kMemoize:
      memo_put(memo_.size());
      break;
    case kBinGet:
      memo_get(little_endian(1));
      break;
    case kLongBinGet:
      memo_get(little_endian(4));
      break;
    case kGlobal: {
      std::string module = line();
      on_global(module, line());
      break;
    }
    case kStackGlobal: {
      std::string name = pop_string();
      on_global(pop_string(), name);
      break;
    }
    case kInst: {  // builds an object of a class: never allowed, but name the class
      std::string module = line();
      on_global(module, line());
      fail("unsupported pickle opcode INST");
    }
    case kReduce:
      on_reduce();
      break;
    case kBuild:
      on_build();
      break;
    case kBinPersId:
      on_persid();
      break;
    default: {
      pos_ = at;
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      fail(std::string("unsupported pickle opcode ") + hex);
    }
  }
}

void Unpickler::on_global(const std::string& module, const std::string& name) {
  std::optional<Global> global = allowed_global(module, name);
  if (!global)
    throw Error("refusing to load '" + module + "." + name + "' from " + source_ +
                ": only tensors, numpy arrays, dicts, lists, tuples, numbers, strings and bytes "
                "are allowed");
  push(*global);
}

void Unpickler::make_tuple(std::vector<Item> items) {
  bool plain = true;
  for (const Item& item : items) plain = plain && std::holds_alternative<c10::IValue>(item);
  if (plain) {
    std::vector<c10::IValue> values;
    for (Item& item : items) values.push_back(std::get<c10::IValue>(std::move(item)));
    push(c10::IValue(c10::ivalue::Tuple::create(std::move(values))));
    return;
  }
  // A storage's persistent id, or arguments for numpy (a dtype, bytes, ndarray).
  const Global* type = items.size() == 5 ? std::get_if<Global>(&items[1]) : nullptr;
  if (type == nullptr || type->kind != GlobalKind::kStorage) {
    size_t depth = 1;
    for (const Item& item : items)
      if (auto* t = std::get_if<std::shared_ptr<const ArgTuple>>(&item))
        depth = std::max(depth, (*t)->depth + 1);
    if (depth > kMaxNesting)
      fail("tuples nested deeper than " + std::to_string(kMaxNesting) + " levels");
    push(std::make_shared<const ArgTuple>(ArgTuple{std::move(items), depth}));
    return;
  }
  c10::IValue tag = as_value(items[0]), key = as_value(items[2]), numel = as_value(items[4]);
  as_value(items[3]);  // location: tensors are loaded onto the CPU
  if (!tag.isString() || tag.toStringRef() != "storage" || !key.isString() || !numel.isInt() ||
      numel.toInt() < 0)
    fail("malformed storage reference");
  push(PersistentId{key.toStringRef(), type->dtype, numel.toInt()});
}

void Unpickler::set_items(std::vector<Item> items) {
  if (items.size() % 2 != 0) fail("SETITEMS with an odd number of items");
  c10::IValue& target = top_value();
  if (!target.isGenericDict()) fail("SETITEM on a " + target.tagKind());
  c10::impl::GenericDict dict = target.toGenericDict();
  for (size_t i = 0; i < items.size(); i += 2) {
    c10::IValue key = as_value(std::move(items[i]));
    if (!key.isString() && !key.isInt() && !key.isDouble() && !key.isBool())
      fail("a dict key of type " + key.tagKind() + " (only str, int, float and bool keys)");
    dict.insert_or_assign(std::move(key), as_value(std::move(items[i + 1])));
  }
}

void Unpickler::append_items(std::vector<Item> items) {
  c10::IValue& target = top_value();
  if (!target.isList()) fail("APPEND on a " + target.tagKind());
  c10::List<c10::IValue> list = target.toList();
  for (Item& item : items) list.push_back(as_value(std::move(item)));
}

std::vector<Item> Unpickler::tuple_items(const Item& item) const {
  if (auto* t = std::get_if<std::shared_ptr<const ArgTuple>>(&item)) return (*t)->items;
  const auto* value = std::get_if<c10::IValue>(&item);
  if (value == nullptr || !value->isTuple())
    fail("expected a tuple (REDUCE arguments, BUILD state)");
  const auto& elements = value->toTupleRef().elements();
  return std::vector<Item>(elements.begin(), elements.end());
}

void Unpickler::on_reduce() {
  const std::vector<Item> args = tuple_items(pop());
  Item callable = pop();
  const Global* global = std::get_if<Global>(&callable);
  if (global == nullptr) fail("REDUCE needs a global to call");
  std::vector<c10::IValue> values;  // the arguments as data, for the torch globals
  for (const Item& arg : args)
    if (global->kind < GlobalKind::kNumpyReconstruct) values.push_back(as_value(arg));
  switch (global->kind) {
    case GlobalKind::kOrderedDict:
      push(make_ordered_dict(values));
      return;
    case GlobalKind::kRebuildTensor:
      push(rebuild_tensor(values));
      return;
    case GlobalKind::kRebuildParameter:
      if (values.empty() || !values[0].isTensor()) fail("_rebuild_parameter needs a tensor");
      push(values[0]);
      return;
    case GlobalKind::kTypeTag:
      if (values.empty()) fail("'" + global->name + "' needs an argument");
      push(values[0]);
      return;
    case GlobalKind::kStorage:
    case GlobalKind::kNumpyNdarray:
      fail("'" + global->name + "' cannot be called");
    default:
      push(reduce_numpy(*global, args));
  }
}

std::shared_ptr<NumpyDtype> Unpickler::dtype_of(const Item& item) const {
  auto* dtype = std::get_if<std::shared_ptr<NumpyDtype>>(&item);
  if (dtype == nullptr) fail("expected a numpy dtype");
  return *dtype;
}

std::vector<int64_t> Unpickler::shape_of(const Item& item) const {
  const c10::IValue value = as_value(item);
  if (!value.isTuple()) fail("a numpy shape must be a tuple");
  std::vector<int64_t> shape;
  for (const c10::IValue& size : value.toTupleRef().elements()) {
    if (!size.isInt()) fail("a numpy shape must hold integers");
    shape.push_back(size.toInt());
  }
  return shape;
}

// The bytes of a numpy buffer: Python bytes, or a str numpy encodes as latin-1 (Python 2 files).
std::string_view Unpickler::buffer_of(const Item& item, std::string* scratch) const {
  if (auto* bytes = std::get_if<Bytes>(&item)) return *bytes->data;
  const auto* value = std::get_if<c10::IValue>(&item);
  if (value != nullptr && value->isList()) fail("numpy object arrays are not read");
  if (value == nullptr || !value->isString()) fail("a numpy buffer must be bytes");
  *scratch = numpy([&] { return latin1_bytes(value->toStringRef()); });
  return *scratch;
}

Item Unpickler::reduce_numpy(const Global& global, const std::vector<Item>& args) {
  auto arity = [&](size_t n) {
    if (args.size() != n)
      fail("'" + global.name + "' takes " + std::to_string(n) + " arguments, the pickle gives " +
           std::to_string(args.size()));
  };
  std::string scratch;
  switch (global.kind) {
    case GlobalKind::kNumpyReconstruct: {  // (numpy.ndarray, (0,), b'b'); BUILD follows
      arity(3);
      const Global* type = std::get_if<Global>(&args[0]);
      if (type == nullptr || type->kind != GlobalKind::kNumpyNdarray)
        fail("'" + global.name + "' is read only for numpy.ndarray");
      return std::make_shared<PendingArray>();
    }
    case GlobalKind::kNumpyDtype: {  // ('f4', align, copy); BUILD gives the byte order
      arity(3);
      const c10::IValue descr = as_value(args[0]);
      if (!descr.isString()) fail("numpy.dtype needs a type string");
      return std::make_shared<NumpyDtype>(numpy([&] { return numpy_dtype(descr.toStringRef()); }));
    }
    case GlobalKind::kNumpyFromBuffer: {  // (buffer, dtype, shape, order)
      arity(4);
      const std::string_view buffer = buffer_of(args[0], &scratch);
      const std::shared_ptr<NumpyDtype> dtype = dtype_of(args[1]);
      const std::vector<int64_t> shape = shape_of(args[2]);
      const c10::IValue order = as_value(args[3]);
      if (!order.isString() || (order.toStringRef() != "C" && order.toStringRef() != "F"))
        fail("'" + global.name + "': the order must be 'C' or 'F'");
      const bool fortran = order.toStringRef() == "F";
      return c10::IValue(numpy([&] { return numpy_array(buffer, *dtype, shape, fortran); }));
    }
    case GlobalKind::kNumpyScalar: {  // (dtype, bytes): a 0-d array
      arity(2);
      const std::shared_ptr<NumpyDtype> dtype = dtype_of(args[0]);
      const std::string_view buffer = buffer_of(args[1], &scratch);
      return c10::IValue(numpy([&] { return numpy_array(buffer, *dtype, {}, false); }));
    }
    case GlobalKind::kCodecsEncode: {  // (text, 'latin1'): protocol 2's bytes
      arity(2);
      const c10::IValue text = as_value(args[0]), encoding = as_value(args[1]);
      if (!text.isString() || !encoding.isString() ||
          (encoding.toStringRef() != "latin1" && encoding.toStringRef() != "latin-1"))
        fail("'_codecs.encode' is read only as (text, 'latin1')");
      return Bytes{std::make_shared<const std::string>(
                       numpy([&] { return latin1_bytes(text.toStringRef()); })),
                   false};
    }
    case GlobalKind::kBytes:  // bytes(): protocol 2's empty bytes
      if (!args.empty()) fail("'" + global.name + "' is read only without arguments");
      return Bytes{std::make_shared<const std::string>(), false};
    default:
      fail("'" + global.name + "' cannot be called");
  }
}

void Unpickler::build_array(PendingArray& array, const std::vector<Item>& state) {
  // (version, shape, dtype, is_fortran, data), or without the version (numpy < 1.0)
  if (array.tensor) fail("a numpy array's state is set twice");
  if (state.size() != 4 && state.size() != 5) fail("unexpected numpy array state");
  const size_t first = state.size() == 5 ? 1 : 0;
  const std::vector<int64_t> shape = shape_of(state[first]);
  const std::shared_ptr<NumpyDtype> dtype = dtype_of(state[first + 1]);
  const c10::IValue fortran = as_value(state[first + 2]);
  if (!fortran.isBool() && !fortran.isInt()) fail("a numpy array's Fortran flag must be a bool");
  const bool is_fortran = fortran.isBool() ? fortran.toBool() : fortran.toInt() != 0;
  std::string scratch;
  const std::string_view buffer = buffer_of(state[first + 3], &scratch);
  array.tensor = numpy([&] { return numpy_array(buffer, *dtype, shape, is_fortran); });
}

c10::IValue Unpickler::make_ordered_dict(const std::vector<c10::IValue>& args) {
  c10::impl::GenericDict dict = new_dict();
  if (args.empty()) return dict;
  if (args.size() != 1 || !args[0].isList()) fail("OrderedDict takes a list of pairs");
  for (const c10::IValue& pair : args[0].toListRef()) {
    if (!pair.isTuple() || pair.toTupleRef().elements().size() != 2)
      fail("OrderedDict takes a list of pairs");
    const auto& kv = pair.toTupleRef().elements();
    if (!kv[0].isString() && !kv[0].isInt()) fail("an OrderedDict key of type " + kv[0].tagKind());
    dict.insert_or_assign(kv[0], kv[1]);
  }
  return dict;
}

// The non-negative ints of a tuple (sizes, strides); sets *ok to false for anything else.
std::vector<int64_t> int_tuple(const c10::IValue& value, bool* ok) {
  std::vector<int64_t> out;
  if (!value.isTuple()) {
    *ok = false;
    return out;
  }
  for (const c10::IValue& v : value.toTupleRef().elements()) {
    if (!v.isInt() || v.toInt() < 0) *ok = false;
    out.push_back(v.isInt() ? v.toInt() : 0);
  }
  return out;
}

c10::IValue Unpickler::rebuild_tensor(const std::vector<c10::IValue>& args) {
  // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  bool ok = (args.size() == 6 || args.size() == 7) && args[0].isTensor() && args[1].isInt();
  std::vector<int64_t> sizes = ok ? int_tuple(args[2], &ok) : std::vector<int64_t>{};
  std::vector<int64_t> strides = ok ? int_tuple(args[3], &ok) : std::vector<int64_t>{};
  if (!ok || sizes.size() != strides.size()) fail("malformed _rebuild_tensor_v2 arguments");
  const at::Tensor& storage = args[0].toTensor();
  const int64_t offset = args[1].toInt();
  int64_t last = offset, numel = 1;
  bool overflow = offset < 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t reach = 0;
    overflow |= __builtin_mul_overflow(sizes[d], numel, &numel);
    if (sizes[d] > 0)
      overflow |= __builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) ||
                  __builtin_add_overflow(last, reach, &last);
  }
  if (overflow || (numel > 0 ? last >= storage.numel() : offset > storage.numel()))
    fail("a tensor reaches past the end of its storage");
  return at::empty({0}, storage.options()).set_(storage.storage(), offset, sizes, strides);
}

void Unpickler::on_build() {
  const Item state = pop();
  Item& target = top();
  if (auto* dtype = std::get_if<std::shared_ptr<NumpyDtype>>(&target)) {
    const c10::IValue value = as_value(state);
    if (!value.isTuple()) fail("a numpy dtype's state must be a tuple");
    numpy([&] {
      set_numpy_dtype_state(**dtype, value.toTupleRef().elements().vec());
      return 0;
    });
    return;
  }
  if (auto* array = std::get_if<std::shared_ptr<PendingArray>>(&target)) {
    build_array(**array, tuple_items(state));
    return;
  }
  as_value(state);  // OrderedDict attributes such as _metadata, dropped
  if (!top_value().isGenericDict()) fail("BUILD on a " + top_value().tagKind());
}

void Unpickler::on_persid() {
  Item item = pop();
  auto* id = std::get_if<PersistentId>(&item);
  if (id == nullptr) fail("unsupported persistent id (not a tensor storage)");
  auto it = storages_.find(id->key);
  if (it == storages_.end()) {
    it = storages_.emplace(id->key, load_(id->key, id->dtype, id->numel)).first;
  } else if (it->second.scalar_type() != id->dtype || it->second.numel() != id->numel) {
    fail("storage '" + id->key + "' is referenced with two types");
  }
  push(c10::IValue(it->second));
}

}  // namespace

c10::IValue restricted_unpickle(std::string_view pickle, const StorageLoader& load_storage,
                                const std::string& source) {
  return Unpickler(pickle, load_storage, source).run();
}

}  // namespace detkit::checkpoint
