#include "detkit/engine/tensorboard_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <climits>
#include <filesystem>

#include "detkit/engine/tensorboard_event.pb.h"
#include "detkit/engine/writers.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"

namespace detkit::engine {
namespace {

std::array<uint32_t, 256> crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // Castagnoli
    table[i] = c;
  }
  return table;
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// One TFRecord: length, its masked CRC, the data, its masked CRC (integers little-endian).
std::string framed(const std::string& data) {
  auto put = [](std::string& out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string out, length;
  put(length, data.size(), 8);
  out += length;
  put(out, masked_crc32c(length.data(), length.size()), 4);
  out += data;
  put(out, masked_crc32c(data.data(), data.size()), 4);
  return out;
}

std::string scalar_event(const std::string& tag, double value, int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return framed(event.SerializeAsString());
}

std::string image_event(const EventStorage::Image& image) {
  tensorboard::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(image.iter);
  tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(image.name);
  tensorboard::Image* picture = v->mutable_image();
  picture->set_height(static_cast<int32_t>(image.height));
  picture->set_width(static_cast<int32_t>(image.width));
  picture->set_colorspace(3);
  picture->set_encoded_image_string(image.png);
  return framed(event.SerializeAsString());
}

}  // namespace

uint32_t masked_crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = crc32c_table();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  crc ^= 0xFFFFFFFFu;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TensorboardEventFile::TensorboardEventFile(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error("cannot create '" + dir + "' for TensorBoard: " + error.message());
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  path_ = (std::filesystem::path(dir) /
           fmt::format("events.out.tfevents.{:010d}.{}.{}", static_cast<int64_t>(now_seconds()),
                       host, getpid()))
              .string();
  tensorboard::Event version;
  version.set_wall_time(now_seconds());
  version.set_file_version("brain.Event:2");
  append(framed(version.SerializeAsString()));
}

void TensorboardEventFile::append(const std::string& records) { append_whole(path_, records); }

TensorboardWriter::TensorboardWriter(const std::string& output_dir, int64_t period)
    : file_(output_dir), period_(period) {}

void TensorboardWriter::after_step(Trainer& t) {
  if ((t.iter() + 1) % period_ == 0 || t.iter() == t.max_iter() - 1) write(t);
}

void TensorboardWriter::after_train(Trainer& t) { write(t); }

void TensorboardWriter::write(Trainer& t) {
  // Detectron2's TensorboardXWriter: what is newer than the last write, smoothed as the JSON
  // writer smooths it (window 20), at the iteration it was recorded; one append per write.
  std::string records;
  for (const auto& [iteration, scalars] : unwritten_scalars(t.storage(), written_))
    for (const auto& [name, value] : scalars) records += scalar_event(name, value, iteration);
  for (const EventStorage::Image& image : t.storage().take_images()) records += image_event(image);
  if (!records.empty()) file_.append(records);
}

}  // namespace detkit::engine
