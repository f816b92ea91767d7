#include "detkit/distributed/comm.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::distributed {

namespace {
std::shared_ptr<Communicator>& current() {
  static std::shared_ptr<Communicator> comm = std::make_shared<SingleProcess>();
  return comm;
}

std::string n(int v) { return std::to_string(v); }
}  // namespace

void check_topology(const Topology& t) {
  if (t.world_size < 1) throw Error("world size must be at least 1, got " + n(t.world_size));
  if (t.rank < 0 || t.rank >= t.world_size)
    throw Error("rank " + n(t.rank) + " is outside a world of " + n(t.world_size));
  if (t.local_world_size < 1 || t.world_size % t.local_world_size != 0)
    throw Error("rank " + n(t.rank) + ": local world size " + n(t.local_world_size) +
                " does not divide the world size " + n(t.world_size));
  if (t.local_rank < 0 || t.local_rank >= t.local_world_size)
    throw Error("rank " + n(t.rank) + ": local rank " + n(t.local_rank) +
                " is outside a local world of " + n(t.local_world_size));
}

Communicator& communicator() { return *current(); }

std::shared_ptr<Communicator> install(std::shared_ptr<Communicator> comm) {
  if (!comm) throw Error("distributed::install needs a communicator");
  check_topology(comm->topology());
  std::swap(current(), comm);
  return comm;
}

int get_rank() { return communicator().topology().rank; }
int get_world_size() { return communicator().topology().world_size; }
int get_local_rank() { return communicator().topology().local_rank; }
int get_local_size() { return communicator().topology().local_world_size; }
bool is_main_process() { return get_rank() == 0; }

void synchronize() {
  if (get_world_size() > 1) communicator().barrier();
}

namespace {
// Groups `tensors` into buckets of about `bytes`, all-reduces each bucket as one flat buffer and
// copies the sums back: one collective per bucket instead of one per tensor.
void all_reduce_in_buckets(const std::vector<at::Tensor>& tensors, size_t bytes) {
  size_t begin = 0;
  while (begin < tensors.size()) {
    size_t end = begin, size = 0;
    while (end < tensors.size() && (end == begin || size < bytes)) {
      size += tensors[end].numel() * tensors[end].element_size();
      ++end;
    }
    std::vector<at::Tensor> flat;
    for (size_t i = begin; i < end; ++i) flat.push_back(tensors[i].reshape({-1}));
    std::vector<at::Tensor> bucket = {at::cat(flat)};
    communicator().all_reduce_sum(bucket);
    int64_t offset = 0;
    for (size_t i = begin; i < end; ++i) {
      const int64_t n = tensors[i].numel();
      tensors[i].view({-1}).copy_(bucket[0].narrow(0, offset, n));
      offset += n;
    }
    begin = end;
  }
}
constexpr size_t kBucketBytes = 25u << 20;  // DDP's bucket_cap_mb
}  // namespace

void average_gradients(const std::vector<at::Tensor>& parameters,
                       const std::vector<std::string>& names) {
  const int world = get_world_size();
  if (world == 1) return;
  at::NoGradGuard no_grad;
  // Which parameters have a gradient, on each rank.
  const auto count = static_cast<int64_t>(parameters.size());
  at::Tensor mine = at::zeros({count}, at::kByte);
  uint8_t* mine_data = mine.data_ptr<uint8_t>();
  for (int64_t i = 0; i < count; ++i) mine_data[i] = parameters[i].grad().defined() ? 1 : 0;
  const std::vector<at::Tensor> has = communicator().all_gather(mine);
  // As DDP without find_unused_parameters: every trainable parameter takes part in every step
  // on every rank. Every rank sees the same flags, so every rank stops here with this error.
  for (int64_t i = 0; i < count; ++i) {
    std::string missing;
    for (int r = 0; r < world; ++r)
      if (has[r].data_ptr<uint8_t>()[i] == 0)
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    if (missing.empty()) continue;
    const std::string name = i < static_cast<int64_t>(names.size()) ? names[i]
                                                                     : "#" + std::to_string(i);
    throw Error("parameter " + name + " got no gradient on rank " + missing + " of " +
                std::to_string(world) +
                ": with several ranks every trainable parameter must take part in every step's "
                "loss (DDP's rule without find_unused_parameters); freeze it or make the loss "
                "use it");
  }
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : parameters) grads.push_back(p.grad());
  for (at::Tensor& g : grads) g.div_(world);
  all_reduce_in_buckets(grads, kBucketBytes);
}

std::vector<std::string> all_gather_bytes(const std::string& bytes) {
  if (get_world_size() == 1) return {bytes};
  at::NoGradGuard no_grad;
  // The sizes first, then every rank's bytes padded to the largest.
  const auto sizes = communicator().all_gather(at::tensor({static_cast<int64_t>(bytes.size())}));
  int64_t largest = 0;
  for (const at::Tensor& s : sizes) largest = std::max(largest, s.item<int64_t>());
  at::Tensor mine = at::zeros({std::max<int64_t>(largest, 1)}, at::kByte);
  std::copy(bytes.begin(), bytes.end(), mine.data_ptr<uint8_t>());
  const auto all = communicator().all_gather(mine);
  std::vector<std::string> out;
  for (size_t r = 0; r < all.size(); ++r) {
    const auto* data = reinterpret_cast<const char*>(all[r].data_ptr<uint8_t>());
    out.emplace_back(data, static_cast<size_t>(sizes[r].item<int64_t>()));
  }
  return out;
}

void broadcast_from_main(const std::vector<at::Tensor>& tensors) {
  if (get_world_size() == 1) return;
  at::NoGradGuard no_grad;
  for (const at::Tensor& t : tensors) {
    std::vector<at::Tensor> one = {t.detach().contiguous()};
    communicator().broadcast(one, 0);
    if (!one[0].is_same(t)) t.detach().copy_(one[0]);
  }
}

}  // namespace detkit::distributed
