#pragma once
// detkit evaluate --voc-dir: Pascal VOC AP of per-class results files (evaluate_voc.cpp).
#include <string>

namespace detkit::tools {

struct VocEvaluateOptions {
  std::string voc_dir;      // holds Annotations/ and ImageSets/Main/
  std::string split;        // ImageSets/Main/<split>.txt
  std::string results_dir;  // <class>.txt for each of the 20 classes
  std::string metric;       // "11point", "area", or "" (by the folder's year: VOC2007 11-point)
  bool json = false;
};

/// Prints {"bbox": {"AP", "AP50", "AP75"}} (--json) or the tables; returns the exit status.
int evaluate_voc(const VocEvaluateOptions& options);

}  // namespace detkit::tools
