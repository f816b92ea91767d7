#include "detkit/ops/cpu/onednn_execution.h"

#include <ATen/ATen.h>

namespace detkit::ops::cpu {
namespace {

using dnnl::memory;

memory::dims dims_of(const at::Tensor& t) {
  return memory::dims(t.sizes().begin(), t.sizes().end());
}

/// The kernels' working memory (tens of MB for a large map), kept per thread and grown as
/// needed: allocated per call, glibc maps large blocks afresh and the page faults of zeroing
/// them took as long as the convolution (2 x 256 x 48 x 64: 21 ms a call against 9 ms).
memory scratchpad(const memory::desc& d) {
  thread_local at::Tensor buffer;
  const int64_t bytes = int64_t(d.get_size());
  if (!buffer.defined() || buffer.numel() < bytes) {
    buffer = at::Tensor();  // the old one first: the peak is the larger buffer, not both
    buffer = at::empty({bytes}, at::kByte);
  }
  return memory(d, cpu_engine(), buffer.data_ptr());
}

/// `t`'s memory as `dims` (the primitive's logical order) laid out as `plain`.
memory user_memory(const at::Tensor& t, const memory::dims& dims, memory::format_tag plain) {
  int64_t elements = 1;
  for (auto d : dims) elements *= d;
  const bool laid_out = plain == memory::format_tag::nhwc
                            ? t.is_contiguous(at::MemoryFormat::ChannelsLast)
                            : t.is_contiguous();
  TORCH_INTERNAL_ASSERT(laid_out && t.numel() == elements, "oneDNN memory of ", elements,
                        " elements for a tensor of ", t.sizes());
  return memory(memory::desc(dims, memory::data_type::f32, plain), cpu_engine(), t.data_ptr());
}

}  // namespace

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

memory::desc any_layout(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void reorder_between(const at::Tensor& from, memory::format_tag from_layout, const at::Tensor& to,
                     memory::format_tag to_layout, const memory::dims& dims) {
  memory source = user_memory(from, dims, from_layout);
  memory target = user_memory(to, dims, to_layout);
  dnnl::stream stream(cpu_engine());
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
}

Execution::Execution() : stream_(cpu_engine()) {}

memory Execution::input(const at::Tensor& t, const memory::desc& want, memory::format_tag plain) {
  memory user = user_memory(t, want.dims(), plain);
  if (user.get_desc() == want) return user;
  for (const auto& r : reordered_)
    if (r.data == t.data_ptr() && r.layout == want) return r.copy;
  memory m = scratch(want);
  dnnl::reorder(user, m).execute(stream_, user, m);
  reordered_.push_back({t.data_ptr(), want, m});
  return m;
}

memory Execution::output(const at::Tensor& t, const memory::desc& made, memory::format_tag plain) {
  memory user = user_memory(t, made.dims(), plain);
  if (user.get_desc() == made) return user;
  memory m = scratch(made);
  pending_.push_back({m, user});
  return m;
}

void Execution::run(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd,
                    std::unordered_map<int, memory> args) {
  args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc()));
  p.execute(stream_, args);
  for (auto& [made, user] : pending_) dnnl::reorder(made, user).execute(stream_, made, user);
  pending_.clear();
  stream_.wait();
}

memory Execution::scratch(const memory::desc& d) {
  buffers_.push_back(at::empty({int64_t(d.get_size())}, at::kByte));
  return memory(d, cpu_engine(), buffers_.back().data_ptr());
}

}  // namespace detkit::ops::cpu
