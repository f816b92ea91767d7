#include "detkit/data/ordered_mapper.h"

#include <string>

#include "detkit/utils/denormals.h"
#include "detkit/utils/error.h"
#include "detkit/utils/threads.h"

namespace detkit::data {

OrderedMapper::OrderedMapper(SampleSource source, MapFunction map, int num_workers, size_t capacity)
    : source_(std::move(source)), map_(std::move(map)), capacity_(capacity) {
  if (num_workers < 0) {
    throw Error("DATALOADER.NUM_WORKERS must be >= 0, got " + std::to_string(num_workers));
  }
  if (capacity_ == 0) throw Error("OrderedMapper: capacity must be at least 1");
  for (int w = 0; w < num_workers; ++w) workers_.emplace_back([this] { work(); });
}

OrderedMapper::~OrderedMapper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  room_.notify_all();
  ready_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void OrderedMapper::work() {
  use_one_thread_for_ops_in_this_thread();  // the training step has the cores
  apply_flush_denormal_to_this_thread();     // FLUSH_DENORMAL, as the step's threads
  while (true) {
    uint64_t number;
    std::optional<StreamSample> sample;
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      room_.wait(lock, [&] { return stop_ || end_ || claimed_ < consumed_ + capacity_; });
      if (stop_ || end_) return;
      number = claimed_;
      try {
        sample = source_();
      } catch (...) {
        slot.error = std::current_exception();
      }
      if (!sample && !slot.error) {
        end_ = number;
        room_.notify_all();
        ready_.notify_all();
        return;
      }
      ++claimed_;
    }
    if (sample) {
      try {
        slot.sample = map(*sample);
      } catch (...) {
        slot.error = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_[number] = std::move(slot);
    }
    ready_.notify_all();
  }
}

MappedSample OrderedMapper::map(const StreamSample& sample) const {
  return MappedSample{sample.position, sample.index, map_(sample.position, sample.index)};
}

std::optional<MappedSample> OrderedMapper::next() {
  if (workers_.empty()) {  // map in this thread
    if (end_) return std::nullopt;
    std::optional<StreamSample> sample = source_();
    if (!sample) {
      end_ = consumed_;
      return std::nullopt;
    }
    ++consumed_;
    return map(*sample);
  }
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return done_.count(consumed_) > 0 || (end_ && consumed_ >= *end_); });
    auto it = done_.find(consumed_);
    if (it == done_.end()) return std::nullopt;
    slot = std::move(it->second);
    done_.erase(it);
    ++consumed_;
  }
  room_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(slot.sample);
}

}  // namespace detkit::data
