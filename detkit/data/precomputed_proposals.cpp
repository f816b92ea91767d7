#include "detkit/data/precomputed_proposals.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "detkit/data/detection_dataset.h"
#include "detkit/structures/boxes.h"
#include "detkit/utils/error.h"

namespace detkit::data {

ProposalTable::ProposalTable(const DetectionDataset& dataset,
                             const std::vector<std::string>& files) {
  const auto& parts = dataset.parts();
  if (files.size() != parts.size())
    throw Error("MODEL.LOAD_PROPOSALS: " + std::to_string(files.size()) + " proposal files for " +
                std::to_string(parts.size()) +
                " datasets (one file per dataset, in the same order)");
  for (size_t k = 0; k < parts.size(); ++k) {
    auto& table = tables_[parts[k].get()];
    for (ImageProposals& p : read_proposal_file(files[k])) {
      // Sorted by decreasing logit, as load_proposals_into_dataset sorts them (a stable sort:
      // equal logits keep the file's order).
      const at::Tensor order =
          std::get<1>(p.objectness_logits.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
      p.boxes = p.boxes.index_select(0, order);
      p.objectness_logits = p.objectness_logits.index_select(0, order);
      table.emplace(p.image_id, std::move(p));
    }
    const CocoDataset& part = *parts[k];
    for (size_t i = 0; i < part.num_images(); ++i) {
      if (!table.count(part.image(i).id))
        throw Error("proposal file '" + files[k] + "' has no proposals for image id " +
                    std::to_string(part.image(i).id) + " of " + dataset.names()[k] + " (" +
                    std::string(part.image(i).file_name) + ")");
    }
  }
}

const ImageProposals& ProposalTable::of(const CocoDataset& part, int64_t image_id) const {
  const auto table = tables_.find(&part);
  if (table == tables_.end()) throw Error("ProposalTable: a dataset it was not made for");
  const auto it = table->second.find(image_id);
  if (it == table->second.end())
    throw Error("ProposalTable: no proposals for image id " + std::to_string(image_id));
  return it->second;
}

std::shared_ptr<const ProposalTable> proposal_table_from_config(const config::CfgNode& cfg,
                                                                const DetectionDataset& dataset,
                                                                bool is_train,
                                                                const std::string& test_name) {
  if (!cfg.get_bool("MODEL.LOAD_PROPOSALS")) return nullptr;
  const std::string key =
      is_train ? "DATASETS.PROPOSAL_FILES_TRAIN" : "DATASETS.PROPOSAL_FILES_TEST";
  const auto files = cfg.get_string_list(key);
  std::vector<std::string> chosen = files;
  if (!is_train) {
    // The file at the test dataset's position in DATASETS.TEST, as Detectron2 picks it.
    const auto tests = cfg.get_string_list("DATASETS.TEST");
    const auto at = std::find(tests.begin(), tests.end(), test_name);
    if (files.size() != tests.size() || at == tests.end())
      throw Error(key + " must name one proposal file per dataset of DATASETS.TEST (" +
                  std::to_string(tests.size()) + "), got " + std::to_string(files.size()));
    chosen = {files[at - tests.begin()]};
  } else if (files.size() != cfg.get_string_list("DATASETS.TRAIN").size()) {
    throw Error(key + " must name one proposal file per dataset of DATASETS.TRAIN (" +
                std::to_string(cfg.get_string_list("DATASETS.TRAIN").size()) + "), got " +
                std::to_string(files.size()));
  }
  return std::make_shared<const ProposalTable>(dataset, chosen);
}

structures::Instances transform_proposals(const ImageProposals& proposals,
                                          const TransformList& transforms, int64_t height,
                                          int64_t width, int64_t topk) {
  const at::Tensor boxes = proposals.boxes.to(at::kFloat).contiguous();
  const int64_t n = boxes.size(0);
  at::Tensor moved = at::empty({n, 4}, at::kFloat);
  const float* in = boxes.data_ptr<float>();
  float* out = moved.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    const auto b = transforms.apply_box({in[4 * i], in[4 * i + 1], in[4 * i + 2], in[4 * i + 3]});
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<float>(b[j]);
  }
  structures::Boxes clipped(moved);
  clipped.clip(height, width);
  const at::Tensor keep = clipped.nonempty(0.0);
  at::Tensor kept_boxes = clipped.tensor().index({keep});
  at::Tensor kept_logits = proposals.objectness_logits.to(at::kFloat).index({keep});
  if (topk > 0 && kept_boxes.size(0) > topk) {
    kept_boxes = kept_boxes.narrow(0, 0, topk);
    kept_logits = kept_logits.narrow(0, 0, topk);
  }
  structures::Instances result(height, width);
  result.set("proposal_boxes", structures::Boxes(kept_boxes));
  result.set("objectness_logits", kept_logits);
  return result;
}

}  // namespace detkit::data
