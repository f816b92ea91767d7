#include "detkit/distributed/gloo_communicator.h"

#include <c10/core/InferenceMode.h>
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

std::vector<at::Tensor> GlooCommunicator::all_gather(const at::Tensor& input) {
  c10::InferenceMode normal_tensors(false);  // Gloo writes the outputs from its own thread
  std::vector<at::Tensor> in = {input.contiguous()};
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < topology_.world_size; ++r) out[0].push_back(at::empty_like(in[0]));
  run(topology_, rendezvous_, "all-gather", [&] { return group_->pg->allgather(out, in); });
  return out[0];
}

}  // namespace detkit::distributed
