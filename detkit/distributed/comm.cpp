#include "detkit/distributed/comm.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

#include "detkit/distributed/gradient_reducer.h"
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

namespace {
struct Done : PendingCollective {
  void wait() override {}
};
}  // namespace

std::unique_ptr<PendingCollective> Communicator::start_all_reduce_sum(const at::Tensor& tensor) {
  std::vector<at::Tensor> one = {tensor};
  all_reduce_sum(one);
  if (!one[0].is_same(tensor)) tensor.copy_(one[0]);
  return std::make_unique<Done>();
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

void average_gradients(const std::vector<at::Tensor>& parameters,
                       const std::vector<std::string>& names) {
  if (get_world_size() == 1) return;
  GradientReducer reducer(parameters, names, /*hooks=*/false);
  reducer.prepare();
  reducer.finish();
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
