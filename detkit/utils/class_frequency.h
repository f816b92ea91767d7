#pragma once
// A bridge from the models to the dataset metadata they cannot include (data sits right of
// modeling): Detectron2's box predictor takes the sampling weights of its federated loss from the
// train datasets' MetadataCatalog entries (get_fed_loss_cls_weights: class_image_count ** power).
// The data library installs the reader when it loads (detkit/data/fed_loss_weights.cpp); the box
// predictor calls read_class_frequency_weights.
#include <functional>
#include <string>
#include <vector>

namespace detkit {

/// Per contiguous class of `datasets`, its weight (image count ** power).
using ClassFrequencyWeightsReader =
    std::function<std::vector<double>(const std::vector<std::string>& datasets, double power)>;

/// Installs `reader` for the process (the last one installed wins).
void set_class_frequency_weights_reader(ClassFrequencyWeightsReader reader);

/// The weights through the installed reader; a detkit::Error naming `key` (the setting that asks
/// for them) when no reader is installed (the data library is not loaded).
std::vector<double> read_class_frequency_weights(const std::vector<std::string>& datasets,
                                                 double power, const std::string& key);

}  // namespace detkit
