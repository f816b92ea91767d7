#pragma once
// The sampling weights of the box predictor's federated loss (Detectron2's
// get_fed_loss_cls_weights in detectron2/data/detection_utils.py): per contiguous class, the
// number of training images that show it (the metadata's class_image_count, LVIS's image_count)
// to the power MODEL.ROI_BOX_HEAD.FED_LOSS_FREQ_WEIGHT_POWER. Loading the data library installs
// this function as the models' reader (detkit/utils/class_frequency.h).
#include <string>
#include <vector>

namespace detkit::data {

/// The weights from the metadata of `train_datasets` (DATASETS.TRAIN), which must all carry the
/// same class_image_count, as Detectron2's check_metadata_consistency. A detkit::Error naming the
/// dataset and MODEL.ROI_BOX_HEAD.USE_FED_LOSS for: no dataset, a dataset without
/// class_image_count, two datasets whose counts differ, a count of a dataset with thing_classes
/// whose length differs from them, a negative count, a weight that is not finite, or all weights 0.
std::vector<double> fed_loss_class_weights(const std::vector<std::string>& train_datasets,
                                           double power);

}  // namespace detkit::data
