#pragma once
// Proposals and detections compared as matched sets rather than in rank order: two items whose
// scores differ by ~1e-5 can swap ranks between CPUs (or thread counts) with nothing wrong, and a
// rank-order comparison then sees a box hundreds of pixels away. Each reference item needs a
// partner of ours (same label where labels are given) within the box and score tolerances; an
// item may stay unmatched only where a near-tie at the cut explains it: its score is within the
// score tolerance of the set's lowest (a top-k or threshold boundary).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace detkit::testing {

struct ScoredSet {
  at::Tensor boxes;   // (N, 4)
  at::Tensor scores;  // (N)
  at::Tensor labels;  // (N) or undefined
};

struct SetMatch {
  std::vector<int64_t> partner;  // per reference item: the index of its partner in ours, or -1
  int64_t swapped = 0;           // matched items that sit at another rank
  double max_box_diff = 0, max_score_diff = 0;  // over matched pairs
  std::vector<int64_t> unmatched_reference, unmatched_ours;
  int64_t unexplained = 0;  // unmatched items that no near-tie explains

  std::string summary() const {
    std::ostringstream out;
    out << (partner.size() - unmatched_reference.size()) << "/" << partner.size() << " matched ("
        << swapped << " at another rank), max abs diff boxes " << max_box_diff << " px, scores "
        << max_score_diff << "; unmatched: " << unmatched_reference.size() << " reference, "
        << unmatched_ours.size() << " ours, " << unexplained << " not explained by a tie";
    return out.str();
  }
};

inline SetMatch match_sets(const ScoredSet& ours, const ScoredSet& reference, double box_tol,
                           double score_tol) {
  const at::Tensor ob = ours.boxes.to(at::kDouble).contiguous();
  const at::Tensor rb = reference.boxes.to(at::kDouble).contiguous();
  const at::Tensor os = ours.scores.to(at::kDouble).contiguous();
  const at::Tensor rs = reference.scores.to(at::kDouble).contiguous();
  const bool labelled = ours.labels.defined() && reference.labels.defined();
  const at::Tensor ol = labelled ? ours.labels.to(at::kLong).contiguous() : at::Tensor();
  const at::Tensor rl = labelled ? reference.labels.to(at::kLong).contiguous() : at::Tensor();
  const int64_t n_ours = ob.size(0), n_ref = rb.size(0);
  const double* obp = ob.data_ptr<double>();
  const double* rbp = rb.data_ptr<double>();
  const double* osp = os.data_ptr<double>();
  const double* rsp = rs.data_ptr<double>();
  const int64_t* olp = labelled ? ol.data_ptr<int64_t>() : nullptr;
  const int64_t* rlp = labelled ? rl.data_ptr<int64_t>() : nullptr;

  SetMatch m;
  m.partner.assign(n_ref, -1);
  std::vector<bool> taken(n_ours, false);
  for (int64_t r = 0; r < n_ref; ++r) {
    int64_t best = -1;
    double best_diff = box_tol;
    for (int64_t o = 0; o < n_ours; ++o) {
      if (taken[o] || std::abs(osp[o] - rsp[r]) >= score_tol) continue;
      if (labelled && olp[o] != rlp[r]) continue;
      double diff = 0;
      for (int c = 0; c < 4; ++c) diff = std::max(diff, std::abs(obp[4 * o + c] - rbp[4 * r + c]));
      if (diff < best_diff) best = o, best_diff = diff;
    }
    if (best < 0) {
      m.unmatched_reference.push_back(r);
      continue;
    }
    taken[best] = true;
    m.partner[r] = best;
    m.swapped += best != r;
    m.max_box_diff = std::max(m.max_box_diff, best_diff);
    m.max_score_diff = std::max(m.max_score_diff, std::abs(osp[best] - rsp[r]));
  }
  for (int64_t o = 0; o < n_ours; ++o)
    if (!taken[o]) m.unmatched_ours.push_back(o);

  auto lowest = [](const double* s, int64_t n) {
    return n == 0 ? 0.0 : *std::min_element(s, s + n);
  };
  auto at_cut = [score_tol](double score, double set_lowest) {
    return score <= set_lowest + score_tol;
  };
  for (int64_t r : m.unmatched_reference) m.unexplained += !at_cut(rsp[r], lowest(rsp, n_ref));
  for (int64_t o : m.unmatched_ours) m.unexplained += !at_cut(osp[o], lowest(osp, n_ours));
  return m;
}

}  // namespace detkit::testing
