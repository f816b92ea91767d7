#pragma once
// Small string helpers shared by the config system and the CLI.
#include <string>
#include <string_view>
#include <vector>

namespace detkit {

/// Levenshtein distance between a and b.
size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to `word` by edit distance, or "" when none is plausibly a typo of it.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

std::vector<std::string> split(const std::string& s, char sep);
std::string join(const std::vector<std::string>& parts, const std::string& sep);
std::string trim(const std::string& s);

/// Whether `text` begins with `prefix`, byte for byte (embedded NULs included).
inline bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

/// Whether `text` ends with `suffix`, byte for byte.
inline bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace detkit
