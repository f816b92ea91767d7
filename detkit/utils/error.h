#pragma once
// The one exception type detkit throws for bad input: its message names what was wrong and where
// (file, JSON path, annotation id, config key). The CLI prints it on one line and exits non-zero.
#include <stdexcept>
#include <string>

namespace detkit {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace detkit
