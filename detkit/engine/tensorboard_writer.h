#pragma once
// TensorBoard event files, as Detectron2's TensorboardXWriter writes them: OUTPUT_DIR/
// events.out.tfevents.<time>.<host>.<pid> holds a file_version "brain.Event:2" event, then one
// event per scalar (Summary.Value.simple_value) under metrics.json's names at metrics.json's
// iterations. Records are TFRecord-framed: length (uint64, little-endian), masked CRC32C of the
// length, the serialised Event, masked CRC32C of it.
#include <cstdint>
#include <map>
#include <string>

#include "detkit/engine/trainer.h"

namespace detkit::engine {

/// The masked CRC32C (Castagnoli) of TFRecord framing.
uint32_t masked_crc32c(const void* data, size_t size);

class TensorboardEventFile {
 public:
  /// Creates `dir`/events.out.tfevents.<seconds>.<host>.<pid> and writes the file_version event.
  explicit TensorboardEventFile(const std::string& dir);
  const std::string& path() const { return path_; }
  /// Appends framed records as a whole; a failed write is a detkit::Error naming the file and
  /// the errno (no partial record is left).
  void append(const std::string& records);

 private:
  std::string path_;
};

/// Every `period` iterations and at the end of training: each scalar of the trainer's storage
/// that is newer than the last write (the smoothed value where it has the smoothing hint, as
/// metrics.json), at the iteration it was recorded, then the storage's images (VIS_PERIOD) as
/// Summary.Value.image (PNG, colorspace 3).
class TensorboardWriter : public HookBase {
 public:
  explicit TensorboardWriter(const std::string& output_dir, int64_t period = 20);
  void after_step(Trainer& t) override;
  void after_train(Trainer& t) override;
  const std::string& path() const { return file_.path(); }

 private:
  void write(Trainer& t);
  TensorboardEventFile file_;
  int64_t period_;
  std::map<std::string, int64_t> written_;  // per metric, the iteration last written
};

}  // namespace detkit::engine
