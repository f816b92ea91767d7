#include "detkit/data/dataset_mapper.h"

#include <ATen/ATen.h>

#include <opencv2/core.hpp>

#include "detkit/data/image/image_io.h"
#include "detkit/data/metadata.h"
#include "detkit/data/semantic_target.h"
#include "detkit/utils/error.h"

namespace detkit::data {

std::vector<int64_t> keypoint_hflip_indices(const config::CfgNode& cfg) {
  const auto names = cfg.get_string_list("DATASETS.TRAIN");
  if (names.empty()) throw Error("MODEL.KEYPOINT_ON: DATASETS.TRAIN names no dataset");
  const Metadata& first = global_metadata().get(names.front());
  for (const auto& name : names) {
    if (global_metadata().get(name).keypoint_names != first.keypoint_names)
      throw Error("MODEL.KEYPOINT_ON: datasets '" + names.front() + "' and '" + name +
                  "' of DATASETS.TRAIN name different keypoints (metadata keypoint_names)");
  }
  const int64_t num_keypoints = cfg.get_int("MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS");
  if (first.keypoint_names.empty())
    throw Error("MODEL.KEYPOINT_ON: the metadata of '" + names.front() +
                "' has no keypoint_names (and keypoint_flip_map) to train keypoints with");
  if (static_cast<int64_t>(first.keypoint_names.size()) != num_keypoints)
    throw Error("MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS is " + std::to_string(num_keypoints) +
                " but the metadata of '" + names.front() + "' names " +
                std::to_string(first.keypoint_names.size()) + " keypoints");
  return first.keypoint_flip_indices();
}

DatasetMapperOptions dataset_mapper_options_from_config(const config::CfgNode& cfg, bool is_train) {
  DatasetMapperOptions options;
  options.is_train = is_train;
  options.augmentations = build_augmentation(cfg, is_train);
  options.image_format = cfg.get_string("INPUT.FORMAT");
  if (options.image_format != "BGR" && options.image_format != "RGB") {
    throw Error("INPUT.FORMAT must be 'BGR' or 'RGB', got '" + options.image_format + "'");
  }
  options.mask_format =
      mask_format_from_config(cfg.get_bool("MODEL.MASK_ON"), cfg.get_string("INPUT.MASK_FORMAT"));
  options.recompute_boxes =
      is_train && cfg.get_bool("INPUT.CROP.ENABLED") && cfg.get_bool("MODEL.MASK_ON");
  // Only training maps keypoints (Detectron2 computes the indices for the test mapper too, so
  // evaluating a dataset without keypoint metadata fails there for nothing).
  if (is_train && cfg.get_bool("MODEL.KEYPOINT_ON"))
    options.keypoint_hflip_indices = keypoint_hflip_indices(cfg);
  return options;
}

DatasetMapper::DatasetMapper(DatasetMapperOptions options) : options_(std::move(options)) {
  if (options_.image_format != "BGR" && options_.image_format != "RGB") {
    throw Error("DatasetMapper: image format must be 'BGR' or 'RGB', got '" +
                options_.image_format + "'");
  }
}

at::Tensor image_to_tensor(const cv::Mat& image) {
  TORCH_CHECK(image.depth() == CV_8U, "image_to_tensor needs an 8-bit image, got OpenCV depth ",
              image.depth());
  // OpenCV's vectorised de-interleave into 8-bit planes, then each plane converted straight into
  // its channel of the tensor: 2 contiguous passes where libtorch's permuted .to(kFloat) and
  // .contiguous() made 2 strided ones (the loader 1214 -> 1400 images/s, measured). Values are
  // the same integers 0..255 either way.
  at::Tensor out = at::empty({image.channels(), image.rows, image.cols}, at::kFloat);
  std::vector<cv::Mat> planes;
  cv::split(image, planes);
  float* data = out.data_ptr<float>();
  for (size_t c = 0; c < planes.size(); ++c) {
    cv::Mat channel(image.rows, image.cols, CV_32F, data + c * image.total());
    planes[c].convertTo(channel, CV_32F);
  }
  return out;
}

structures::ModelInput DatasetMapper::operator()(const CocoDataset& dataset, size_t image_index,
                                                 SampleRng& rng) const {
  const ImageView record = dataset.image(image_index);
  const std::string path = dataset.image_path(image_index);
  // A file that cannot be used is a BadImage naming the file, the image and its annotations.
  auto bad = [&](const std::string& what) {
    std::string ids;
    for (const AnnotationView a : dataset.annotations_of(image_index))
      ids += (ids.empty() ? "" : ", ") + std::to_string(a.id());
    return BadImage(what + " (image id " + std::to_string(record.id) + ", " +
                    (ids.empty() ? "no annotations" : "annotation ids " + ids) + ")");
  };
  cv::Mat image;
  try {
    image = read_image(path, options_.image_format);
  } catch (const Error& e) {
    throw bad(e.what());
  } catch (const cv::Exception& e) {
    throw bad(path + ": OpenCV could not decode it: " + e.what());
  }
  if (image.cols != record.width || image.rows != record.height) {
    // A dataset without a json file (load_sem_seg) takes the size from the label map's header.
    const std::string source =
        dataset.json_file().empty()
            ? "its label map " + dataset.sem_seg_path(image_index).value_or("")
            : dataset.json_file();
    throw bad(path + ": decoded image is " + std::to_string(image.cols) + "x" +
              std::to_string(image.rows) + " (width x height) but " + source + " says " +
              std::to_string(record.width) + "x" + std::to_string(record.height));
  }
  TransformList transforms =
      apply_augmentations(options_.augmentations, image.rows, image.cols, rng);
  image = transforms.apply_image(image);

  structures::ModelInput input;
  input.image = image_to_tensor(image);
  input.height = record.height;
  input.width = record.width;
  input.file_name = path;
  if (options_.proposals) {
    input.proposals = transform_proposals(options_.proposals->of(dataset, record.id), transforms,
                                          image.rows, image.cols, options_.proposal_topk);
  }
  // Detectron2 reads the label map in testing too, for nothing: no model's inference takes it.
  if (options_.is_train) {
    if (std::optional<std::string> labels = dataset.sem_seg_path(image_index)) {
      try {
        input.sem_seg =
            read_semantic_target(*labels, path, record.height, record.width, transforms);
      } catch (const Error& e) {
        throw bad(e.what());
      }
    }
    input.instances = transform_instance_targets(
        dataset, image_index, transforms, image.rows, image.cols, options_.mask_format,
        options_.keypoint_hflip_indices.empty() ? nullptr : &options_.keypoint_hflip_indices,
        options_.recompute_boxes);
  }
  return input;
}

}  // namespace detkit::data
