#include "detkit/distributed/process_group_communicator.h"

#include <arpa/inet.h>
#include <c10/core/InferenceMode.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <thread>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "detkit/distributed/nccl_backend.h"
#include "detkit/utils/error.h"

namespace detkit::distributed {

struct ProcessGroupCommunicator::Group {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
  c10::intrusive_ptr<c10d::Backend> nccl;  // backend "nccl" only

  // NCCL for CUDA tensors where the job has it, Gloo for the rest.
  c10d::Backend& for_tensor(const at::Tensor& t) const {
    if (nccl && t.is_cuda()) return *nccl;
    return *gloo;
  }
};

namespace {
std::string where(const Topology& t, const Rendezvous& r) {
  return "rank " + std::to_string(t.rank) + " of " + std::to_string(t.world_size) + " at " +
         r.master_addr + ":" + std::to_string(r.master_port);
}

// Waits for a collective; a failure or a time-out names the rank and what it was doing.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const Topology& t, const Rendezvous& r,
              const char* what, bool on_gpu = false) {
  try {
    // An NCCL collective's wait makes the current CUDA stream wait for it, without blocking the
    // host (NCCL's watchdog enforces the time-out); given a time-out it would block the host.
    if (on_gpu)
      work->wait();
    else
      work->wait(r.timeout);
  } catch (const c10::Error& e) {
    throw Error(where(t, r) + ": " + what + " failed: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(where(t, r) + ": " + what + " failed: " + e.what());
  }
}

// Starts a collective; a failure to start names the rank and the operation.
template <typename F>
c10::intrusive_ptr<c10d::Work> start(const Topology& t, const Rendezvous& r, const char* what,
                                     F f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw Error(where(t, r) + ": " + what + " failed: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(where(t, r) + ": " + what + " failed: " + e.what());
  }
}

// Starts a collective and waits for it.
template <typename F>
void run(const Topology& t, const Rendezvous& r, const char* what, F f, bool on_gpu = false) {
  wait_for(start(t, r, what, f), t, r, what, on_gpu);
}

class GroupPending : public PendingCollective {
 public:
  GroupPending(c10::intrusive_ptr<c10d::Work> work, const Topology& t, const Rendezvous& r,
               bool on_gpu)
      : work_(std::move(work)), topology_(t), rendezvous_(r), on_gpu_(on_gpu) {}
  void wait() override { wait_for(work_, topology_, rendezvous_, "all-reduce", on_gpu_); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  Topology topology_;
  Rendezvous rendezvous_;
  bool on_gpu_;
};
}  // namespace

namespace {
std::string seconds(std::chrono::milliseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

// Every rank counts itself in at the store, then waits until all have: a job that cannot form
// ends after the time-out saying how many came, instead of waiting in Gloo's connect.
void wait_for_every_rank(c10d::TCPStore& store, const Topology& t, const Rendezvous& r) {
  const std::string key = "detkit/arrived";
  store.add(key, 1);
  const auto deadline = std::chrono::steady_clock::now() + r.timeout;
  while (true) {
    const int64_t arrived = store.add(key, 0);
    if (arrived >= t.world_size) return;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(where(t, r) + ": " + std::to_string(arrived) + " of " +
                  std::to_string(t.world_size) + " ranks arrived within " + seconds(r.timeout) +
                  " (--dist-timeout); the others did not start or cannot reach this address");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}
}  // namespace

namespace {
// The address of this host's interface that faces `host` (the source address the kernel picks
// for a datagram there; nothing is sent), or "" when there is no route.
std::string address_facing(const std::string& host) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || !found) return "";
  std::string address;
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
    char text[INET_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text))) address = text;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return address;
}

// The interface Gloo's peers reach this rank on: GLOO_SOCKET_IFNAME when set (PyTorch's
// variable), loopback for a job on this machine, else the interface that faces the master.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master) {
  if (const char* name = std::getenv("GLOO_SOCKET_IFNAME"); name && *name)
    return c10d::ProcessGroupGloo::createDeviceForInterface(name);
  if (master == "127.0.0.1" || master == "localhost")
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  const std::string local = address_facing(master);
  return local.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                       : c10d::ProcessGroupGloo::createDeviceForHostname(local);
}
}  // namespace

ProcessGroupCommunicator::ProcessGroupCommunicator(const Topology& topology,
                                                   const Rendezvous& rendezvous)
    : topology_(topology), rendezvous_(rendezvous), group_(std::make_unique<Group>()) {
  check_topology(topology_);
  if (rendezvous_.backend != "gloo" && rendezvous_.backend != "nccl")
    throw Error(where(topology_, rendezvous_) + ": unknown backend '" + rendezvous_.backend +
                "' (DETKIT_DIST_BACKEND): 'gloo' or 'nccl'");
  if (rendezvous_.backend == "nccl" && !nccl_available())
    throw Error(where(topology_, rendezvous_) +
                ": the NCCL backend needs detkit built with CUDA (DETKIT_CUDA=ON); this one was "
                "built without it: use DETKIT_DIST_BACKEND=gloo");
  if (rendezvous_.backend == "nccl" && rendezvous_.gpu < 0)
    throw Error(where(topology_, rendezvous_) +
                ": the NCCL backend needs a GPU for each rank, and this rank sees none "
                "(CUDA_VISIBLE_DEVICES, the driver): use DETKIT_DIST_BACKEND=gloo");
  if (rendezvous_.master_port <= 0 || rendezvous_.master_port > 65535)
    throw Error(where(topology_, rendezvous_) + ": the master port must be in 1..65535");
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(rendezvous_.master_port);
    options.isServer = topology_.rank == 0;
    options.numWorkers = topology_.world_size;
    options.waitWorkers = false;  // counted below, with a message
    options.timeout = rendezvous_.timeout;
    group_->store = c10::make_intrusive<c10d::TCPStore>(rendezvous_.master_addr, options);
  } catch (const std::exception& e) {
    const c10::Error* c10 = dynamic_cast<const c10::Error*>(&e);
    throw Error(where(topology_, rendezvous_) + ": could not join the job: " +
                (topology_.rank == 0 ? "cannot serve the rendezvous there"
                                     : "the master did not answer within " +
                                           seconds(rendezvous_.timeout) + " (--dist-timeout)") +
                ": " + (c10 ? c10->what_without_backtrace() : e.what()));
  }
  wait_for_every_rank(*group_->store, topology_, rendezvous_);
  try {
    auto pg_options = c10d::ProcessGroupGloo::Options::create(rendezvous_.timeout);
    pg_options->devices.push_back(gloo_device(rendezvous_.master_addr));
    group_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, topology_.rank,
                                                               topology_.world_size, pg_options);
    if (rendezvous_.backend == "nccl")
      group_->nccl = make_nccl_backend(
          c10::make_intrusive<c10d::PrefixStore>("nccl", group_->store), topology_.rank,
          topology_.world_size, rendezvous_.gpu, rendezvous_.timeout);
  } catch (const c10::Error& e) {
    throw Error(where(topology_, rendezvous_) +
                ": could not join the job: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(where(topology_, rendezvous_) + ": could not join the job: " + e.what());
  }
}

std::string ProcessGroupCommunicator::description() const {
  return "master " + rendezvous_.master_addr + ":" + std::to_string(rendezvous_.master_port) +
         (group_->nccl ? ", backend nccl on GPU " + std::to_string(rendezvous_.gpu) +
                             " (gloo for CPU tensors)"
                       : ", backend gloo");
}

ProcessGroupCommunicator::~ProcessGroupCommunicator() = default;

bool ProcessGroupCommunicator::on_gpu(const at::Tensor& t) const {
  return group_->nccl && t.is_cuda();
}

void ProcessGroupCommunicator::barrier() {
  run(topology_, rendezvous_, "barrier", [&] { return group_->gloo->barrier(); });
}

void ProcessGroupCommunicator::all_reduce_sum(std::vector<at::Tensor>& tensors) {
  for (at::Tensor& t : tensors) {
    std::vector<at::Tensor> one = {t};
    run(
        topology_, rendezvous_, "all-reduce", [&] { return group_->for_tensor(t).allreduce(one); },
        on_gpu(t));
  }
}

void ProcessGroupCommunicator::broadcast(std::vector<at::Tensor>& tensors, int root) {
  for (at::Tensor& t : tensors) {
    std::vector<at::Tensor> one = {t};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    run(
        topology_, rendezvous_, "broadcast",
        [&] { return group_->for_tensor(t).broadcast(one, options); }, on_gpu(t));
  }
}

std::unique_ptr<PendingCollective> ProcessGroupCommunicator::start_all_reduce_sum(
    const at::Tensor& tensor) {
  std::vector<at::Tensor> one = {tensor};
  auto work = start(topology_, rendezvous_, "all-reduce",
                    [&] { return group_->for_tensor(tensor).allreduce(one); });
  return std::make_unique<GroupPending>(std::move(work), topology_, rendezvous_, on_gpu(tensor));
}

std::vector<at::Tensor> ProcessGroupCommunicator::all_gather(const at::Tensor& input) {
  c10::InferenceMode normal_tensors(false);  // Gloo writes the outputs from its own thread
  std::vector<at::Tensor> in = {input.contiguous()};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < topology_.world_size; ++r) out[0].push_back(at::empty_like(in[0]));
  run(
      topology_, rendezvous_, "all-gather",
      [&] { return group_->for_tensor(in[0]).allgather(out, in); }, on_gpu(in[0]));
  return out[0];
}

}  // namespace detkit::distributed
