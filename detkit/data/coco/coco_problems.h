#pragma once
// Where problems found while loading a COCO file go: thrown at once (loading) or collected
// (the data doctor). Internal to detkit/data.
#include <string>
#include <utility>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::data {

class ProblemList {
 public:
  ProblemList(std::string file, bool collect) : file_(std::move(file)), collect_(collect) {}

  /// Records "<file>: <message>", or throws it as detkit::Error when not collecting.
  void add(const std::string& message) {
    std::string full = file_ + ": " + message;
    if (!collect_) throw Error(full);
    messages_.push_back(std::move(full));
  }
  /// Records a message that already names the file (a malformed-JSON error from the scanner).
  void add_full(const std::string& message) { messages_.push_back(message); }

  bool empty() const { return messages_.empty(); }
  const std::string& file() const { return file_; }
  std::vector<std::string> take() { return std::move(messages_); }

 private:
  std::string file_;
  bool collect_;
  std::vector<std::string> messages_;
};

}  // namespace detkit::data
