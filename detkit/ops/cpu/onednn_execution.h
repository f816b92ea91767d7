#pragma once
// Running oneDNN primitives on libtorch tensors: the CPU engine, layouts left to the primitive,
// and one execution with its reorders and scratchpad. Shared by the kernels detkit calls through
// oneDNN's own API (Winograd convolutions, transposed convolutions). Internal to ops/cpu.
#include <ATen/core/Tensor.h>

#include <array>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

namespace detkit::ops::cpu {

/// The one CPU engine; oneDNN runs on libtorch's OpenMP threads.
dnnl::engine& cpu_engine();

/// float32 `dims` in whatever layout the primitive prefers.
dnnl::memory::desc any_layout(const dnnl::memory::dims& dims);

/// Primitive attributes with the scratchpad passed in by Execution::run (kept per thread).
dnnl::primitive_attr user_scratchpad();

/// Copies float32 `from`, whose logical `dims` are laid out as `from_layout`, into `to`, laid out
/// as `to_layout` (oneDNN's reorder; both tensors contiguous, of as many elements as dims).
void reorder_between(const at::Tensor& from, dnnl::memory::format_tag from_layout,
                     const at::Tensor& to, dnnl::memory::format_tag to_layout,
                     const dnnl::memory::dims& dims);

/// One execution of one or more primitives: user tensors in libtorch's layouts, reordered to and
/// from the primitives'. An input reordered once serves every later primitive that wants it in
/// the same layout (a backward pass's grad_output, read by both gradients' primitives).
class Execution {
 public:
  Execution();

  /// `t` (float32 stored as `plain` says: contiguous, or channels-last for nhwc; `plain` the
  /// order of its dims among the primitive's logical ones, which `want` gives) as the primitive
  /// wants it: the tensor itself when the layouts match, else
  /// its reordered copy (made once per tensor and layout). Inputs are not written meanwhile.
  dnnl::memory input(const at::Tensor& t, const dnnl::memory::desc& want,
                     dnnl::memory::format_tag plain);

  /// Where the primitive writes a result that must end up in `t` (as for input()); run() copies
  /// it there.
  dnnl::memory output(const at::Tensor& t, const dnnl::memory::desc& made,
                      dnnl::memory::format_tag plain);

  /// Runs `p` (made with user_scratchpad()) and copies its outputs into the user tensors.
  void run(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd,
           std::unordered_map<int, dnnl::memory> args);

 private:
  dnnl::memory scratch(const dnnl::memory::desc& d);

  dnnl::stream stream_;
  std::vector<at::Tensor> buffers_;
  std::vector<std::pair<dnnl::memory, dnnl::memory>> pending_;
  struct Reordered {
    const void* data;
    dnnl::memory::desc layout;
    dnnl::memory copy;
  };
  std::vector<Reordered> reordered_;
};

/// Primitives by shape, made on first use by `make` (which returns nullptr where oneDNN has no
/// kernel: that answer is kept too). A model sees a few dozen shapes, its ROI heads one per
/// foreground count. Key: a struct with `std::array<int64_t, K> values() const`.
template <class Key, class Value>
class PrimitiveCache {
 public:
  using Make = std::unique_ptr<Value> (*)(const Key&);
  explicit PrimitiveCache(Make make) : make_(make) {}

  std::shared_ptr<Value> get(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key.values());
    if (it != entries_.end()) return it->second;
    if (entries_.size() >= kMaxShapes) entries_.clear();  // oneDNN keeps its own cache of them
    return entries_.emplace(key.values(), make_(key)).first->second;
  }

 private:
  using Values = decltype(std::declval<Key>().values());
  struct Hash {
    size_t operator()(const Values& values) const {
      size_t h = 0;
      for (int64_t v : values) h = h * 1000003u ^ std::hash<int64_t>()(v);
      return h;
    }
  };
  static constexpr size_t kMaxShapes = 512;
  Make make_;
  std::mutex mutex_;
  std::unordered_map<Values, std::shared_ptr<Value>, Hash> entries_;
};

}  // namespace detkit::ops::cpu
