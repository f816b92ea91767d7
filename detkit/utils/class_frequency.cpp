#include "detkit/utils/class_frequency.h"

#include <mutex>

#include "detkit/utils/error.h"

namespace detkit {
namespace {
// Function-local statics: the data library installs its reader from a static initialiser.
std::mutex& reader_mutex() {
  static std::mutex m;
  return m;
}
ClassFrequencyWeightsReader& installed_reader() {
  static ClassFrequencyWeightsReader reader;
  return reader;
}
}  // namespace

void set_class_frequency_weights_reader(ClassFrequencyWeightsReader reader) {
  std::lock_guard<std::mutex> lock(reader_mutex());
  installed_reader() = std::move(reader);
}

std::vector<double> read_class_frequency_weights(const std::vector<std::string>& datasets,
                                                 double power, const std::string& key) {
  ClassFrequencyWeightsReader reader;
  {
    std::lock_guard<std::mutex> lock(reader_mutex());
    reader = installed_reader();
  }
  if (!reader)
    throw Error(key +
                " needs the train datasets' class_image_count, but no dataset metadata is loaded "
                "in this program (link detkit::data)");
  return reader(datasets, power);
}

}  // namespace detkit
