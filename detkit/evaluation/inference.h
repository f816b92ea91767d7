#pragma once
// inference_on_dataset: runs a model over a test loader, feeds the evaluator (every output the
// model gives: MetaArch::outputs), and logs progress
// with ETA and the per-image time excluding warm-up (Detectron2's inference_on_dataset).
#include <map>
#include <string>

#include "detkit/data/loader.h"
#include "detkit/evaluation/evaluator.h"
#include "detkit/modeling/meta_arch/meta_arch.h"

namespace detkit::evaluation {

std::map<std::string, CocoEvalReport> inference_on_dataset(modeling::MetaArch& model,
                                                           data::TestLoader& loader,
                                                           DatasetEvaluator& evaluator);

}  // namespace detkit::evaluation
