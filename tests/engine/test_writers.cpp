// What the writers take from the event storage: each metric once per new value (values recorded
// late at an iteration already written still go out), and the evaluation results under
// Detectron2's names.
#include <gtest/gtest.h>

#include "detkit/engine/defaults.h"
#include "detkit/engine/writers.h"

namespace detkit::engine {
namespace {

TEST(Writers, EachMetricGoesOutOnceAndLateValuesAtAWrittenIterationToo) {
  EventStorage storage;
  std::map<std::string, int64_t> written;
  storage.set_iter(5);
  storage.put_scalar("loss", 2.0);
  storage.put_scalar("lr", 0.1, /*smoothing_hint=*/false);
  auto out = unwritten_scalars(storage, written);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at(5), (std::map<std::string, double>{{"loss", 2.0}, {"lr", 0.1}}));
  EXPECT_TRUE(unwritten_scalars(storage, written).empty());
  storage.put_scalar("bbox/AP", 63.1, /*smoothing_hint=*/false);  // the final evaluation
  out = unwritten_scalars(storage, written);
  EXPECT_EQ(out, (std::map<int64_t, std::map<std::string, double>>{{5, {{"bbox/AP", 63.1}}}}));
  storage.set_iter(6);
  storage.put_scalar("loss", 4.0);  // smoothed: the median of 2 and 4
  out = unwritten_scalars(storage, written);
  EXPECT_EQ(out, (std::map<int64_t, std::map<std::string, double>>{{6, {{"loss", 3.0}}}}));
}

TEST(Writers, EvaluationResultsGoInTheStorageUnderDetectron2sNames) {
  evaluation::CocoEvalReport bbox;
  bbox.iou_type = evaluation::IouType::Bbox;
  bbox.stats = {0.5, 0.75, 0.25, -1, 0.5, 0.125, 0, 0, 0, 0, 0, 0};
  bbox.per_category_ap = {{1, 0.25}, {2, std::nullopt}, {3, 1.0}};
  bbox.category_names = {{1, "circle"}, {2, "triangle"}};
  EventStorage one;
  one.set_iter(9);
  put_evaluation_results(one, {{"shapes_val", {{"bbox", bbox}}}});
  EXPECT_EQ(one.latest("bbox/AP"), std::make_pair(50.0, int64_t{9}));
  EXPECT_EQ(one.latest("bbox/AP50").first, 75.0);
  EXPECT_EQ(one.latest("bbox/APl").first, 12.5);
  EXPECT_FALSE(one.has("bbox/APs"));  // undefined (-1): left out
  EXPECT_EQ(one.latest("bbox/AP-circle").first, 25.0);
  EXPECT_FALSE(one.has("bbox/AP-triangle"));  // no ground truth
  EXPECT_EQ(one.latest("bbox/AP-3").first, 100.0);  // no name known: the id
  EventStorage two;
  put_evaluation_results(two, {{"a", {{"bbox", bbox}}}, {"b", {{"bbox", bbox}}}});
  EXPECT_TRUE(two.has("a/bbox/AP") && two.has("b/bbox/AP"));
  EventStorage none;  // a rank other than 0: empty reports
  put_evaluation_results(none, {{"shapes_val", {}}});
  EXPECT_TRUE(none.names().empty());
}

}  // namespace
}  // namespace detkit::engine
