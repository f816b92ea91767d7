#include "detkit/evaluation/evaluator.h"

#include "detkit/utils/error.h"

namespace detkit::evaluation {

void DatasetEvaluators::process(const data::InferenceSample& sample,
                                const structures::ModelOutput& output) {
  for (auto& evaluator : evaluators_) evaluator->process(sample, output);
}

std::map<std::string, CocoEvalReport> DatasetEvaluators::evaluate() {
  std::map<std::string, CocoEvalReport> all;
  for (auto& evaluator : evaluators_) {
    for (auto& [task, report] : evaluator->evaluate()) {
      if (all.count(task))
        throw Error("DatasetEvaluators: two evaluators report the task '" + task + "'");
      all.emplace(task, std::move(report));
    }
  }
  return all;
}

}  // namespace detkit::evaluation
