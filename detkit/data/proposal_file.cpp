#include "detkit/data/proposal_file.h"

#include <ATen/ATen.h>

#include <set>

#include "detkit/checkpoint/weights_file.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::data {
namespace {

// Pickle protocol 3 opcodes, as numpy's ndarray.__reduce__ and Python's pickle write them.
class NumpyPickler {
 public:
  NumpyPickler() { out_ = "\x80\x03"; }
  void op(char code) { out_ += code; }
  void raw(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      out_ += static_cast<char>(v);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      u32(static_cast<uint32_t>(static_cast<int32_t>(v)));
    } else {  // LONG1: 8 bytes of two's complement, little-endian
      op('\x8a');
      out_ += '\x08';
      for (int i = 0; i < 8; ++i)
        out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    }
  }
  void text(const std::string& s) {
    op('X');
    u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void bytes(const void* data, size_t size) {
    op('B');
    u32(static_cast<uint32_t>(size));
    raw(data, size);
  }
  void global(const char* module, const char* name) {
    op('c');
    out_ += std::string(module) + "\n" + name + "\n";
  }
  // numpy.core.multiarray._reconstruct(ndarray, (0,), b'b'), then BUILD with the state
  // (1, shape, dtype('<f4'), False, data): what pickle.dumps(np.float32 array) holds.
  void float32_array(const at::Tensor& values) {
    const at::Tensor t = values.to(at::kFloat).contiguous();
    global("numpy.core.multiarray", "_reconstruct");
    global("numpy", "ndarray");
    integer(0);
    op('\x85');  // TUPLE1
    op('C');     // SHORT_BINBYTES b'b'
    out_ += '\x01';
    out_ += 'b';
    op('\x87');  // TUPLE3
    op('R');     // REDUCE
    op('(');
    integer(1);
    op('(');
    for (int64_t s : t.sizes()) integer(s);
    op('t');
    global("numpy", "dtype");
    text("f4");
    op('\x89');  // False
    op('\x88');  // True
    op('\x87');
    op('R');
    op('(');  // dtype state: (3, '<', None, None, None, -1, -1, 0)
    integer(3);
    text("<");
    op('N');
    op('N');
    op('N');
    integer(-1);
    integer(-1);
    integer(0);
    op('t');
    op('b');     // BUILD the dtype
    op('\x89');  // not Fortran order
    bytes(t.data_ptr(), t.numel() * sizeof(float));
    op('t');
    op('b');  // BUILD the array
  }
  std::string finish() {
    op('.');
    return std::move(out_);
  }

 private:
  std::string out_;
};

const c10::IValue& entry(const c10::Dict<c10::IValue, c10::IValue>& dict, const char* key,
                         const std::string& path) {
  auto it = dict.find(std::string(key));
  if (it == dict.end())
    throw Error("proposal file '" + path + "': no key '" + key + "' (Detectron2's proposal " +
                "files hold boxes, objectness_logits, ids and bbox_mode)");
  return it->value();
}

c10::List<c10::IValue> list_of(const c10::IValue& value, const char* key, const std::string& path) {
  if (value.isList()) return value.toList();
  if (value.isTuple()) {
    c10::List<c10::IValue> list(c10::AnyType::get());
    for (const auto& v : value.toTupleRef().elements()) list.push_back(v);
    return list;
  }
  throw Error("proposal file '" + path + "': '" + key + "' is not a list");
}

at::Tensor array_of(const c10::IValue& value, const char* key, size_t i, const std::string& path) {
  if (!value.isTensor())
    throw Error("proposal file '" + path + "': " + key + "[" + std::to_string(i) +
                "] is not an array");
  return value.toTensor();
}

}  // namespace

std::vector<ImageProposals> read_proposal_file(const std::string& path) {
  const c10::IValue value = checkpoint::load_pickle_bytes(read_file(path), path);
  if (!value.isGenericDict()) throw Error("proposal file '" + path + "' does not hold a dict");
  const auto dict = value.toGenericDict();
  const auto boxes = list_of(entry(dict, "boxes", path), "boxes", path);
  const auto logits = list_of(entry(dict, "objectness_logits", path), "objectness_logits", path);
  const auto ids = list_of(entry(dict, "ids", path), "ids", path);
  const c10::IValue& mode = entry(dict, "bbox_mode", path);
  if (!mode.isInt() || (mode.toInt() != 0 && mode.toInt() != 1))
    throw Error("proposal file '" + path +
                "': bbox_mode must be 0 (XYXY_ABS) or 1 (XYWH_ABS), got " + mode.tagKind() +
                (mode.isInt() ? " " + std::to_string(mode.toInt()) : ""));
  if (boxes.size() != ids.size() || logits.size() != ids.size())
    throw Error("proposal file '" + path + "': " + std::to_string(ids.size()) + " ids, " +
                std::to_string(boxes.size()) + " boxes arrays and " +
                std::to_string(logits.size()) + " objectness_logits arrays (one each per image)");
  std::vector<ImageProposals> out;
  std::set<int64_t> seen;
  for (size_t i = 0; i < ids.size(); ++i) {
    const c10::IValue id = ids.get(i);
    if (!id.isInt())
      throw Error("proposal file '" + path + "': ids[" + std::to_string(i) + "] is not an integer");
    ImageProposals p;
    p.image_id = id.toInt();
    const std::string where =
        "proposal file '" + path + "', image id " + std::to_string(p.image_id);
    if (!seen.insert(p.image_id).second) throw Error(where + ": the image is listed twice");
    p.boxes = array_of(boxes.get(i), "boxes", i, path).to(at::kFloat).reshape({-1, 4});
    p.objectness_logits = array_of(logits.get(i), "objectness_logits", i, path).to(at::kFloat);
    if (array_of(boxes.get(i), "boxes", i, path).dim() != 2 || p.objectness_logits.dim() != 1 ||
        p.objectness_logits.size(0) != p.boxes.size(0))
      throw Error(where + ": boxes must be (R, 4) and objectness_logits (R), got " +
                  c10::str(boxes.get(i).toTensor().sizes()) + " and " +
                  c10::str(p.objectness_logits.sizes()));
    if (mode.toInt() == 1) {  // XYWH -> XYXY
      p.boxes = p.boxes.clone();
      p.boxes.narrow(1, 2, 2).add_(p.boxes.narrow(1, 0, 2));
    }
    out.push_back(std::move(p));
  }
  return out;
}

void write_proposal_file(const std::string& path, const std::vector<ImageProposals>& proposals) {
  NumpyPickler p;
  p.op('}');  // EMPTY_DICT
  p.op('(');
  p.text("boxes");
  p.op(']');
  p.op('(');
  for (const auto& image : proposals) p.float32_array(image.boxes.reshape({-1, 4}));
  p.op('e');  // APPENDS
  p.text("objectness_logits");
  p.op(']');
  p.op('(');
  for (const auto& image : proposals) p.float32_array(image.objectness_logits.reshape({-1}));
  p.op('e');
  p.text("ids");
  p.op(']');
  p.op('(');
  for (const auto& image : proposals) p.integer(image.image_id);
  p.op('e');
  p.text("bbox_mode");
  p.integer(0);  // XYXY_ABS
  p.op('u');     // SETITEMS
  atomic_write(path, p.finish());
}

}  // namespace detkit::data
