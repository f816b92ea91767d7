#include "detkit/distributed/gloo_communicator.h"

#include <arpa/inet.h>
#include <c10/core/InferenceMode.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <optional>
#include <thread>

#include "detkit/utils/error.h"

namespace detkit::distributed {

struct GlooCommunicator::Group {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
};

namespace {
std::string where(const Topology& t, const Rendezvous& r) {
  return "rank " + std::to_string(t.rank) + " of " + std::to_string(t.world_size) + " at " +
         r.master_addr + ":" + std::to_string(r.master_port);
}

// Waits for a collective; a failure or a time-out names the rank and what it was doing.
void wait_for(const c10::intrusive_ptr<c10d::Work>& work, const Topology& t, const Rendezvous& r,
              const char* what) {
  try {
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
void run(const Topology& t, const Rendezvous& r, const char* what, F f) {
  wait_for(start(t, r, what, f), t, r, what);
}

class GlooPending : public PendingCollective {
 public:
  GlooPending(c10::intrusive_ptr<c10d::Work> work, const Topology& t, const Rendezvous& r)
      : work_(std::move(work)), topology_(t), rendezvous_(r) {}
  void wait() override { wait_for(work_, topology_, rendezvous_, "all-reduce"); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  Topology topology_;
  Rendezvous rendezvous_;
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

GlooCommunicator::GlooCommunicator(const Topology& topology, const Rendezvous& rendezvous)
    : topology_(topology), rendezvous_(rendezvous), group_(std::make_unique<Group>()) {
  check_topology(topology_);
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
    group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        group_->store, topology_.rank, topology_.world_size, pg_options);
  } catch (const c10::Error& e) {
    throw Error(where(topology_, rendezvous_) + ": could not join the job: " +
                e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(where(topology_, rendezvous_) + ": could not join the job: " + e.what());
  }
}

std::string GlooCommunicator::description() const {
  return "master " + rendezvous_.master_addr + ":" + std::to_string(rendezvous_.master_port) +
         ", backend gloo";
}

GlooCommunicator::~GlooCommunicator() = default;

void GlooCommunicator::barrier() {
  run(topology_, rendezvous_, "barrier", [&] { return group_->pg->barrier(); });
}

void GlooCommunicator::all_reduce_sum(std::vector<at::Tensor>& tensors) {
  for (at::Tensor& t : tensors) {
    std::vector<at::Tensor> one = {t};
    run(topology_, rendezvous_, "all-reduce", [&] { return group_->pg->allreduce(one); });
  }
}

void GlooCommunicator::broadcast(std::vector<at::Tensor>& tensors, int root) {
  for (at::Tensor& t : tensors) {
    std::vector<at::Tensor> one = {t};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    run(topology_, rendezvous_, "broadcast", [&] { return group_->pg->broadcast(one, options); });
  }
}

std::unique_ptr<PendingCollective> GlooCommunicator::start_all_reduce_sum(const at::Tensor& tensor) {
  std::vector<at::Tensor> one = {tensor};
  auto work = start(topology_, rendezvous_, "all-reduce", [&] { return group_->pg->allreduce(one); });
  return std::make_unique<GlooPending>(std::move(work), topology_, rendezvous_);
}

std::vector<at::Tensor> GlooCommunicator::all_gather(const at::Tensor& input) {
  c10::InferenceMode normal_tensors(false);  // Gloo writes the outputs from its own thread
  std::vector<at::Tensor> in = {input.contiguous()};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < topology_.world_size; ++r) out[0].push_back(at::empty_like(in[0]));
  run(topology_, rendezvous_, "all-gather", [&] { return group_->pg->allgather(out, in); });
  return out[0];
}

}  // namespace detkit::distributed
