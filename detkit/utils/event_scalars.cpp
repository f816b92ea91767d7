#include "detkit/utils/event_scalars.h"

namespace detkit {
namespace {
thread_local EventScalarScope* innermost = nullptr;
thread_local std::string prefix;
}  // namespace

EventScalarScope::EventScalarScope(EventScalarSink sink) : sink_(std::move(sink)), outer_(innermost) {
  innermost = this;
}

EventScalarScope::~EventScalarScope() { innermost = outer_; }

EventNameScope::EventNameScope(const std::string& name) : outer_size_(prefix.size()) {
  prefix += name + "/";
}

EventNameScope::~EventNameScope() { prefix.resize(outer_size_); }

void put_event_scalar(const std::string& name, double value, bool smoothing_hint) {
  if (innermost != nullptr) innermost->sink_(prefix + name, value, smoothing_hint);
}

bool event_scalars_wanted() { return innermost != nullptr; }

}  // namespace detkit
