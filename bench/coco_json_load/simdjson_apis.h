#pragma once
// Which simdjson API reads a COCO file faster: the DOM (parse everything into a tape, then walk
// it) or On-Demand (walk the text, parsing values as they are asked for). Both read what the
// COCO loader reads from every annotation; the whole file is parsed at once, in this process.
#include <string>

namespace detkit::bench {

struct ApiTimes {
  double dom_seconds = 0;        // best of the runs
  double on_demand_seconds = 0;  // best of the runs
};

/// Times both APIs `runs` times each, alternating; throws detkit::Error on a parse error.
ApiTimes compare_simdjson_apis(const std::string& json_file, int runs);

}  // namespace detkit::bench
