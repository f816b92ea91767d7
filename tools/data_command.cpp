// detkit data check --config-file X.yaml [KEY VALUE ...]: loads DATASETS.TRAIN and DATASETS.TEST
// as training and testing would, maps every image once, prints counts and every problem found.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include "detkit/config/defaults.h"
#include "detkit/data/catalog.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/dataset_mapper.h"
#include "detkit/utils/error.h"
#include "detkit/utils/progress.h"
#include "detkit/utils/threads.h"
#include "tools/commands.h"

namespace detkit::tools {
namespace {

struct MappingCounts {
  size_t images = 0, instances = 0;
};

// Maps every image on `num_threads` threads; problems[i] is image i's error, if any.
MappingCounts map_all(const std::string& name, const data::CocoDataset& dataset,
                      const data::DatasetMapper& mapper, uint64_t seed, int num_threads,
                      std::vector<std::string>& problems) {
  problems.assign(dataset.num_images(), "");
  std::atomic<size_t> next{0}, finished{0}, images{0}, instances{0};
  Progress progress("Checking " + name + ", mapping every image",
                    static_cast<double>(dataset.num_images()), "images");
  auto work = [&] {
    use_one_thread_for_ops_in_this_thread();
    for (size_t i = next++; i < dataset.num_images(); i = next++) {
      try {
        data::SampleRng rng(seed, i);
        structures::ModelInput input = mapper(dataset, i, rng);
        ++images;
        if (input.instances) instances += static_cast<size_t>(input.instances->size());
      } catch (const std::exception& e) {
        problems[i] = e.what();
      }
      progress.update(static_cast<double>(++finished));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(num_threads, 1); ++t) threads.emplace_back(work);
  for (auto& thread : threads) thread.join();
  return {images.load(), instances.load()};
}

void print_counts(const data::CocoDataset& dataset, bool is_train) {
  std::map<int, size_t> per_class;
  size_t crowd = 0;
  for (size_t a = 0; a < dataset.num_annotations(); ++a) {
    data::AnnotationView annotation = dataset.annotation(a);
    if (annotation.iscrowd()) {
      ++crowd;
    } else {
      ++per_class[annotation.class_index()];
    }
  }
  const auto& stats = dataset.stats();
  std::cout << "  images: " << dataset.num_images();
  if (is_train) std::cout << " (" << stats.filtered_images << " filtered as empty)";
  std::cout << "\n  annotations: " << dataset.num_annotations() - crowd << " instances, " << crowd
            << " crowd\n  dropped: " << stats.dropped_polygons
            << " polygons with fewer than 3 points, " << stats.dropped_annotations
            << " annotations left without a polygon\n  instances per category:\n";
  for (size_t c = 0; c < dataset.num_classes(); ++c) {
    const auto& category = dataset.categories()[c];
    std::cout << "    " << category.name << " (id " << category.id
              << "): " << per_class[static_cast<int>(c)] << "\n";
  }
}

// Checks one dataset; appends its problems. Returns nothing: everything goes to the report.
void check_dataset(const config::CfgNode& cfg, const std::string& name, bool is_train,
                   std::vector<std::string>& problems) {
  std::cout << "dataset '" << name << "' (" << (is_train ? "train" : "test") << ")";
  data::DatasetFiles files;
  try {
    files = data::global_catalog().get(name);
  } catch (const std::exception& e) {
    std::cout << ": not found\n";
    problems.push_back(e.what());
    return;
  }
  data::CocoLoadOptions options;
  options.filter_empty_annotations =
      is_train && cfg.get_bool("DATALOADER.FILTER_EMPTY_ANNOTATIONS");
  if (files.kind == data::DatasetKind::kLvisInstances ||
      files.kind == data::DatasetKind::kLvisCocofied)
    options.format = data::JsonFormat::kLvis;  // the LVIS loader's checks (lvis.h)
  options.lvis_any_category_ids = files.kind == data::DatasetKind::kLvisCocofied;
  data::CocoDataset dataset;
  const bool voc = files.kind == data::DatasetKind::kPascalVoc;  // XML files, no JSON
  if (files.kind == data::DatasetKind::kSemSeg || voc) {  // "_stuffonly": two folders, no JSON
    if (voc)
      std::cout << ": Pascal VOC folder " << files.image_root << ", split " << files.voc_split
                << "\n";
    else
      std::cout << ": label maps under " << files.sem_seg_root << ", images under "
                << files.image_root << "\n";
    try {
      dataset = data::load_dataset(name, options);
    } catch (const std::exception& e) {
      std::cout << (voc ? "  the annotations cannot be loaded; images not mapped\n"
                        : "  the folders cannot be paired; images not mapped\n");
      problems.push_back(e.what());
      return;
    }
  } else {
    std::cout << ": " << files.json_file << ", images under " << files.image_root << "\n";
    std::vector<std::string> json_problems;
    try {
      json_problems = data::check_coco_json(files.json_file, files.image_root, options);
    } catch (const std::exception& e) {
      json_problems = {e.what()};  // the file cannot be read at all
    }
    if (!json_problems.empty()) {
      std::cout << "  " << json_problems.size() << " problem(s) in the JSON; images not mapped\n";
      problems.insert(problems.end(), json_problems.begin(), json_problems.end());
      return;
    }
    dataset = data::load_coco_json(files.json_file, files.image_root, options);
    // Training maps a separated dataset's label maps too: check them as it would.
    if (files.kind == data::DatasetKind::kCocoPanopticSeparated)
      dataset.set_sem_seg_root(files.sem_seg_root);
  }
  print_counts(dataset, is_train);
  data::DatasetMapper mapper(data::dataset_mapper_options_from_config(cfg, is_train));
  const int64_t seed = cfg.get_int("SEED");
  std::vector<std::string> image_problems;
  MappingCounts counts =
      map_all(name, dataset, mapper, seed >= 0 ? static_cast<uint64_t>(seed) : 0,
              static_cast<int>(cfg.get_int("DATALOADER.NUM_WORKERS")), image_problems);
  std::cout << "  mapped: " << counts.images << " of " << dataset.num_images() << " images";
  if (is_train) std::cout << ", " << counts.instances << " instances after augmentation";
  std::cout << "\n";
  for (auto& problem : image_problems) {
    if (!problem.empty()) problems.push_back(std::move(problem));
  }
}

}  // namespace

CommandRunner add_data_command(CLI::App& app) {
  struct Options {
    std::string config_file;
    std::vector<std::string> overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* data_cmd = app.add_subcommand("data", "Dataset tools");
  data_cmd->require_subcommand(1);
  CLI::App* check = data_cmd->add_subcommand(
      "check",
      "Load DATASETS.TRAIN and DATASETS.TEST, map every image once, report counts and every "
      "problem found (exit status 1 if any)");
  check->add_option("--config-file", options->config_file, "Detectron2-style YAML config file")
      ->required();
  accept_overrides(check, "KEY VALUE pairs, e.g. DATASETS.TRAIN \"('my_train',)\"");
  check->footer(
      "Example: detkit data check --config-file "
      "configs/COCO-Detection/faster_rcnn_R_50_FPN_1x.yaml\n");
  return [check, options]() {
    if (!*check) return -1;
    options->overrides = overrides_of(*check);
    const config::CfgNode cfg = load_config(options->config_file, options->overrides);
    std::vector<std::string> problems;
    const auto train = cfg.get_string_list("DATASETS.TRAIN");
    const auto test = cfg.get_string_list("DATASETS.TEST");
    if (train.empty() && test.empty()) {
      problems.push_back("DATASETS.TRAIN and DATASETS.TEST are both empty: nothing to check");
    }
    for (const auto& name : train) check_dataset(cfg, name, true, problems);
    for (const auto& name : test) check_dataset(cfg, name, false, problems);
    if (problems.empty()) {
      std::cout << "no problems found\n";
      return 0;
    }
    std::cout << problems.size() << " problem(s):\n";
    for (const auto& problem : problems) std::cout << "  " << problem << "\n";
    return 1;
  };
}

}  // namespace detkit::tools
