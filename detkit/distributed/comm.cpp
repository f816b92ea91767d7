#include "detkit/distributed/comm.h"

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

}  // namespace detkit::distributed
