#pragma once
// Scalars a model records about its own training step, as Detectron2's models do with
// get_event_storage().put_scalar ("rpn/num_pos_anchors", "fast_rcnn/cls_accuracy",
// "mask_rcnn/accuracy", ...). The trainer opens an EventScalarScope around the training forward
// pass; a model calls put_event_scalar, which goes to the innermost open scope of this thread,
// under the names of the open EventNameScopes (Detectron2's storage.name_scope: "stage1/").
// Outside any scope (inference, validation loss, tests) nothing is recorded, and
// event_scalars_wanted() lets a model skip computing them.
#include <functional>
#include <string>

namespace detkit {

using EventScalarSink =
    std::function<void(const std::string& name, double value, bool smoothing_hint)>;

/// Routes put_event_scalar of this thread to `sink` while it lives (scopes nest).
class EventScalarScope {
 public:
  explicit EventScalarScope(EventScalarSink sink);
  ~EventScalarScope();
  EventScalarScope(const EventScalarScope&) = delete;
  EventScalarScope& operator=(const EventScalarScope&) = delete;

 private:
  EventScalarSink sink_;
  EventScalarScope* outer_;
  friend void put_event_scalar(const std::string&, double, bool);
  friend bool event_scalars_wanted();
};

/// Prefixes the names put while it lives with `prefix` + "/" (nested prefixes join).
class EventNameScope {
 public:
  explicit EventNameScope(const std::string& prefix);
  ~EventNameScope();
  EventNameScope(const EventNameScope&) = delete;
  EventNameScope& operator=(const EventNameScope&) = delete;

 private:
  size_t outer_size_;
};

/// Records `value` under the current name prefix + `name` in the innermost scope, if any.
void put_event_scalar(const std::string& name, double value, bool smoothing_hint = true);
/// Whether a put_event_scalar now would be recorded.
bool event_scalars_wanted();

}  // namespace detkit
