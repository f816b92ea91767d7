#include "detkit/data/fed_loss_weights.h"

#include <cmath>

#include "detkit/data/catalog.h"
#include "detkit/data/metadata.h"
#include "detkit/utils/class_frequency.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {
const char* const kFedLossKey = "MODEL.ROI_BOX_HEAD.USE_FED_LOSS";

std::string fed_loss_where(const std::string& dataset) {
  return std::string(kFedLossKey) + " True: dataset '" + dataset + "'";
}

// Detectron2 has LVIS's image counts in built-in tables, there before the model is built; detkit
// reads them from the LVIS file's categories, which the metadata holds once the file is loaded.
// The model is built before the data loader loads its datasets: an LVIS train dataset whose
// metadata has no counts yet is loaded here (once more: its records are dropped, the metadata
// stays).
Metadata metadata_with_counts(const std::string& name) {
  Metadata meta = global_metadata().get(name);
  if (!meta.class_image_count.empty() || !global_catalog().contains(name)) return meta;
  const DatasetKind kind = global_catalog().get(name).kind;
  if (kind != DatasetKind::kLvisInstances) return meta;
  load_dataset(name);
  return global_metadata().get(name);
}
}  // namespace

std::vector<double> fed_loss_class_weights(const std::vector<std::string>& train_datasets,
                                           double power) {
  if (train_datasets.empty())
    throw Error(std::string(kFedLossKey) + " True needs DATASETS.TRAIN (its class_image_count)");
  std::vector<int64_t> counts;
  for (size_t d = 0; d < train_datasets.size(); ++d) {
    const std::string& name = train_datasets[d];
    const Metadata meta = metadata_with_counts(name);
    if (meta.class_image_count.empty())
      throw Error(fed_loss_where(name) +
                  " has no class_image_count in its metadata (the federated loss " +
                  "samples classes by the number of images that show them)");
    if (!meta.thing_classes.empty() && meta.thing_classes.size() != meta.class_image_count.size())
      throw Error(fed_loss_where(name) + " has " + std::to_string(meta.thing_classes.size()) +
                  " thing classes but class_image_count of " +
                  std::to_string(meta.class_image_count.size()));
    if (d == 0)
      counts = meta.class_image_count;
    else if (meta.class_image_count != counts)
      throw Error(fed_loss_where(name) + " has a class_image_count that differs from '" +
                  train_datasets[0] + "''s");
  }
  std::vector<double> weights;
  double total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0)
      throw Error(fed_loss_where(train_datasets[0]) + ": class " + std::to_string(i) +
                  " has a negative class_image_count (" + std::to_string(counts[i]) + ")");
    weights.push_back(std::pow(static_cast<double>(counts[i]), power));
    if (!std::isfinite(weights.back()))
      throw Error(fed_loss_where(train_datasets[0]) + ": class " + std::to_string(i) + "'s count " +
                  std::to_string(counts[i]) + " ** MODEL.ROI_BOX_HEAD.FED_LOSS_FREQ_WEIGHT_POWER " +
                  std::to_string(power) + " is not finite");
    total += weights.back();
  }
  if (total <= 0)
    throw Error(fed_loss_where(train_datasets[0]) + ": every class_image_count weight is 0");
  return weights;
}

namespace {
// The models read the weights through detkit/utils/class_frequency.h.
const bool fed_loss_reader_installed =
    (set_class_frequency_weights_reader(&fed_loss_class_weights), true);
}  // namespace

}  // namespace detkit::data
