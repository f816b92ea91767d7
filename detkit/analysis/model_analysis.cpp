#include "detkit/analysis/model_analysis.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <sstream>

namespace detkit::analysis {

namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

bool is_under(const std::string& name, const std::string& module) {
  if (module.empty() || name == module) return true;
  return name.size() > module.size() && name.compare(0, module.size(), module) == 0 &&
         name[module.size()] == '.';
}

// Calls visit(name, depth, module) for `module` and every submodule, parents first.
void visit_modules(
    const torch::nn::Module& module, const std::string& name, int64_t depth,
    const std::function<void(const std::string&, int64_t, const torch::nn::Module&)>& visit) {
  visit(name, depth, module);
  for (const auto& child : module.named_children())
    visit_modules(*child.value(), join_name(name, child.key()), depth + 1, visit);
}

std::string owner_of(const std::string& tensor_name) {
  size_t dot = tensor_name.rfind('.');
  return dot == std::string::npos ? "" : tensor_name.substr(0, dot);
}

}  // namespace

std::vector<ModuleRow> module_rows(
    const torch::nn::Module& model,
    const std::map<std::string, std::vector<int64_t>>& values_by_module, int64_t max_depth) {
  size_t width = values_by_module.empty() ? 0 : values_by_module.begin()->second.size();
  std::vector<ModuleRow> rows;
  visit_modules(
      model, "", 0, [&](const std::string& name, int64_t depth, const torch::nn::Module&) {
        if (depth > max_depth) return;
        ModuleRow row{name, depth, std::vector<int64_t>(width, 0)};
        for (const auto& [module, values] : values_by_module)
          if (is_under(module, name))
            for (size_t k = 0; k < width; ++k) row.values[k] += values[k];
        bool all_zero =
            std::all_of(row.values.begin(), row.values.end(), [](int64_t v) { return v == 0; });
        if (rows.empty() || !all_zero) rows.push_back(std::move(row));
      });
  return rows;
}

std::vector<ModuleRow> count_parameters(const torch::nn::Module& model, int64_t max_depth) {
  std::map<std::string, std::vector<int64_t>> by_module;
  for (const auto& p : model.named_parameters(/*recurse=*/true)) {
    auto& values =
        by_module.try_emplace(owner_of(p.key()), std::vector<int64_t>{0, 0}).first->second;
    values[0] += p.value().numel();
    if (p.value().requires_grad()) values[1] += p.value().numel();
  }
  return module_rows(model, by_module, max_depth);
}

std::vector<std::pair<std::string, at::Tensor>> ordered_state_dict(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  visit_modules(model, "", 0, [&](const std::string& name, int64_t, const torch::nn::Module& m) {
    for (const auto& p : m.named_parameters(/*recurse=*/false))
      if (p.value().defined()) out.emplace_back(join_name(name, p.key()), p.value());
    for (const auto& b : m.named_buffers(/*recurse=*/false))
      if (b.value().defined()) out.emplace_back(join_name(name, b.key()), b.value());
  });
  return out;
}

std::string shape_string(const at::Tensor& tensor) {
  std::string out = "(";
  for (int64_t d = 0; d < tensor.dim(); ++d)
    out += (d ? ", " : "") + std::to_string(tensor.size(d));
  return out + ")";
}

std::string with_thousands_separators(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string format_module_table(const std::vector<ModuleRow>& rows,
                                const std::vector<std::string>& value_headers) {
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> cells;
  size_t name_width = std::string("module").size();
  std::vector<size_t> widths;
  for (const auto& h : value_headers) widths.push_back(h.size());
  for (const auto& row : rows) {
    names.push_back(std::string(row.depth, ' ') + (row.name.empty() ? "model" : row.name));
    name_width = std::max(name_width, names.back().size());
    cells.emplace_back();
    for (size_t k = 0; k < row.values.size() && k < widths.size(); ++k) {
      cells.back().push_back(with_thousands_separators(row.values[k]));
      widths[k] = std::max(widths[k], cells.back().back().size());
    }
  }
  std::ostringstream out;
  auto pad = [](const std::string& s, size_t w, bool right) {
    std::string fill(w > s.size() ? w - s.size() : 0, ' ');
    return right ? fill + s : s + fill;
  };
  out << "| " << pad("module", name_width, false);
  for (size_t k = 0; k < widths.size(); ++k) out << " | " << pad(value_headers[k], widths[k], true);
  out << " |\n|:" << std::string(name_width + 1, '-');
  for (size_t w : widths) out << "|" << std::string(w + 1, '-') << ":";
  out << "|\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    out << "| " << pad(names[r], name_width, false);
    for (size_t k = 0; k < widths.size(); ++k)
      out << " | " << pad(k < cells[r].size() ? cells[r][k] : "", widths[k], true);
    out << " |\n";
  }
  return out.str();
}

}  // namespace detkit::analysis
