#include "detkit/distributed/gloo_communicator.h"

#include <spdlog/spdlog.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <optional>

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

// Runs a collective; a failure or a time-out names the rank and what it was doing.
template <typename F>
void run(const Topology& t, const Rendezvous& r, const char* what, F f) {
  try {
    f()->wait(r.timeout);
  } catch (const c10::Error& e) {
    throw Error(where(t, r) + ": " + what + " failed: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(where(t, r) + ": " + what + " failed: " + e.what());
  }
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
    options.waitWorkers = true;
    options.timeout = rendezvous_.timeout;
    group_->store = c10::make_intrusive<c10d::TCPStore>(rendezvous_.master_addr, options);
    auto pg_options = c10d::ProcessGroupGloo::Options::create(rendezvous_.timeout);
    // Over loopback when the job is on this machine; otherwise this host's address.
    const bool local = rendezvous_.master_addr == "127.0.0.1" ||
                       rendezvous_.master_addr == "localhost";
    pg_options->devices.push_back(
        local ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
              : c10d::ProcessGroupGloo::createDefaultDevice());
    group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        group_->store, topology_.rank, topology_.world_size, pg_options);
  } catch (const c10::Error& e) {
    throw Error(where(topology_, rendezvous_) + ": could not join the job: " +
                e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error(where(topology_, rendezvous_) + ": could not join the job: " + e.what());
  }
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

namespace {
int env_int(const char* name, std::optional<int> fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    if (fallback) return *fallback;
    throw Error(std::string("distributed launch: environment variable ") + name + " is not set");
  }
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 20)
    throw Error(std::string("distributed launch: ") + name + "='" + v +
                "' is not a non-negative integer");
  return static_cast<int>(n);
}
}  // namespace

bool init_from_environment() {
  if (env_int("WORLD_SIZE", 1) <= 1) return false;
  Topology t;
  t.world_size = env_int("WORLD_SIZE", std::nullopt);
  t.rank = env_int("RANK", std::nullopt);
  t.local_rank = env_int("LOCAL_RANK", t.rank);
  t.local_world_size = env_int("LOCAL_WORLD_SIZE", t.world_size);
  Rendezvous r;
  const char* addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr) throw Error("distributed launch: environment variable MASTER_ADDR is not set");
  r.master_addr = addr;
  r.master_port = env_int("MASTER_PORT", std::nullopt);
  check_topology(t);
  install(std::make_shared<GlooCommunicator>(t, r));
  spdlog::info("Rank {} of {} (local rank {} of {}), rendezvous {}:{}, backend gloo", t.rank,
               t.world_size, t.local_rank, t.local_world_size, r.master_addr, r.master_port);
  return true;
}

}  // namespace detkit::distributed
