#include "bench/coco_json_load/simdjson_apis.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "detkit/utils/error.h"

namespace detkit::bench {
namespace {

namespace od = simdjson::ondemand;

// What the walk produced, compared between the APIs so that neither skips work.
struct Totals {
  size_t coordinates = 0;
  double sum = 0;
  int64_t ids = 0;
  bool operator==(const Totals& o) const {
    return coordinates == o.coordinates && sum == o.sum && ids == o.ids;
  }
};

Totals walk_dom(const simdjson::padded_string& json) {
  simdjson::dom::parser parser;
  Totals t;
  for (simdjson::dom::element a : parser.parse(json)["annotations"].get_array()) {
    for (auto [key, value] : a.get_object()) {
      if (key == "segmentation" && value.is_array()) {
        for (simdjson::dom::element polygon : value.get_array()) {
          for (double x : polygon.get_array()) t.sum += x, ++t.coordinates;
        }
      } else if (key == "bbox") {
        for (double x : value.get_array()) t.sum += x;
      } else if (key == "area") {
        t.sum += double(value);
      } else if (key == "id" || key == "image_id" || key == "category_id") {
        t.ids += int64_t(value);
      }
    }
  }
  return t;
}

Totals walk_on_demand(const simdjson::padded_string& json) {
  od::parser parser;
  od::document doc = parser.iterate(json);
  Totals t;
  for (od::object a : doc["annotations"].get_array()) {
    for (auto field : a) {
      od::raw_json_string key = field.key();
      od::value value = field.value();
      if (key == "segmentation" && value.type() == od::json_type::array) {
        for (od::array polygon : value.get_array()) {
          for (double x : polygon) t.sum += x, ++t.coordinates;
        }
      } else if (key == "bbox") {
        for (double x : value.get_array()) t.sum += x;
      } else if (key == "area") {
        t.sum += double(value);
      } else if (key == "id" || key == "image_id" || key == "category_id") {
        t.ids += int64_t(value);
      }
    }
  }
  return t;
}

template <typename F>
double seconds(F f, Totals& out) {
  auto start = std::chrono::steady_clock::now();
  out = f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

ApiTimes compare_simdjson_apis(const std::string& json_file, int runs) {
  simdjson::padded_string json;
  if (simdjson::padded_string::load(json_file).get(json)) {
    throw Error("cannot read '" + json_file + "'");
  }
  ApiTimes best{1e30, 1e30};
  try {
    for (int run = 0; run < runs; ++run) {
      Totals dom, on_demand;
      best.dom_seconds = std::min(best.dom_seconds, seconds([&] { return walk_dom(json); }, dom));
      best.on_demand_seconds = std::min(best.on_demand_seconds,
                                        seconds([&] { return walk_on_demand(json); }, on_demand));
      if (!(dom == on_demand)) throw Error("the two APIs read different values");
    }
  } catch (const simdjson::simdjson_error& e) {
    throw Error(json_file + ": " + e.what());
  }
  return best;
}

}  // namespace detkit::bench
