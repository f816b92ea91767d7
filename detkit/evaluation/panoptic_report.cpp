#include "detkit/evaluation/panoptic_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

namespace detkit::evaluation {
namespace {

const std::pair<const char*, PQAverage PQResult::*> kPanopticGroups[] = {
    {"All", &PQResult::all}, {"Things", &PQResult::things}, {"Stuff", &PQResult::stuff}};

std::string fixed3(double v) { return std::isnan(v) ? "nan" : fmt::format("{:.3f}", v); }

// tabulate's centring: the odd space goes right.
std::string centred(const std::string& s, size_t width) {
  const size_t pad = width > s.size() ? width - s.size() : 0;
  return std::string(pad / 2, ' ') + s + std::string(pad - pad / 2, ' ');
}

nlohmann::ordered_json json_number(double v) {
  return std::isnan(v) ? nlohmann::ordered_json() : nlohmann::ordered_json(v);
}

}  // namespace

std::map<std::string, double> panoptic_results(const PQResult& result) {
  std::map<std::string, double> out;
  for (const auto& [suffix, average] : {std::pair{"", result.all}, std::pair{"_th", result.things},
                                        std::pair{"_st", result.stuff}}) {
    out[std::string("PQ") + suffix] = 100 * average.pq;
    out[std::string("SQ") + suffix] = 100 * average.sq;
    out[std::string("RQ") + suffix] = 100 * average.rq;
  }
  return out;
}

std::string panoptic_results_table(const PQResult& result) {
  const std::vector<std::string> headers = {"", "PQ", "SQ", "RQ", "#categories"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, member] : kPanopticGroups) {
    const PQAverage& a = result.*member;
    rows.push_back(
        {name, fixed3(a.pq * 100), fixed3(a.sq * 100), fixed3(a.rq * 100), std::to_string(a.n)});
  }
  // tabulate: a column is as wide as its widest cell, and its header plus 2.
  std::vector<size_t> widths;
  for (size_t j = 0; j < headers.size(); ++j) {
    size_t w = headers[j].size() + 2;
    for (const auto& row : rows) w = std::max(w, row[j].size());
    widths.push_back(w);
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t j = 0; j < cells.size(); ++j) out += " " + centred(cells[j], widths[j]) + " |";
    return out + "\n";
  };
  std::string table = line(headers) + "|";
  for (size_t w : widths) table += ":" + std::string(w, '-') + ":|";
  table += "\n";
  for (const auto& row : rows) table += line(row);
  table.pop_back();
  return "Panoptic Evaluation Results:\n" + table;
}

std::string panoptic_per_category_table(const PQResult& result,
                                        const std::map<int64_t, std::string>& category_names) {
  size_t width = 8;
  for (const auto& [id, scores] : result.per_class) {
    const auto it = category_names.find(id);
    if (it != category_names.end()) width = std::max(width, it->second.size());
  }
  std::string out = fmt::format(
      "| {:<{}} |   id |   PQ    |   SQ    |   RQ    |   TP |   FP |   FN |\n", "category", width);
  out += fmt::format("|:{:-<{}}|-----:|--------:|--------:|--------:|-----:|-----:|-----:|\n", "",
                     width + 1);
  for (const auto& [id, scores] : result.per_class) {
    const auto name = category_names.find(id);
    const auto counts = result.counts.find(id);
    const PQCategoryCounts c = counts == result.counts.end() ? PQCategoryCounts{} : counts->second;
    out += fmt::format("| {:<{}} | {:>4} | {:>7} | {:>7} | {:>7} | {:>4} | {:>4} | {:>4} |\n",
                       name == category_names.end() ? std::to_string(id) : name->second, width, id,
                       fixed3(100 * scores.pq), fixed3(100 * scores.sq), fixed3(100 * scores.rq),
                       c.tp, c.fp, c.fn);
  }
  return out;
}

std::string pq_result_json(const PQResult& result) {
  nlohmann::ordered_json j;
  for (const auto& [name, member] : kPanopticGroups) {
    const PQAverage& a = result.*member;
    j[name] = {{"pq", json_number(a.pq)},
               {"sq", json_number(a.sq)},
               {"rq", json_number(a.rq)},
               {"n", a.n}};
  }
  nlohmann::ordered_json per_category = nlohmann::ordered_json::object();
  for (const auto& [id, s] : result.per_class)
    per_category[std::to_string(id)] = {{"pq", s.pq}, {"sq", s.sq}, {"rq", s.rq}};
  j["per_category"] = per_category;
  return j.dump();
}

}  // namespace detkit::evaluation
