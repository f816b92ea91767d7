// The main of every test binary: GoogleTest's, except that a run whose tests were all skipped
// (none passed, none failed; a fixture that is absent) exits 77, which CTest reports as skipped
// (SKIP_RETURN_CODE, cmake/test_suites.cmake). A run with one test passed or failed reports as
// before: passed, or failed.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  const testing::UnitTest& unit = *testing::UnitTest::GetInstance();
  const bool all_skipped =
      unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count();
  if (failed == 0 && all_skipped) return 77;
  return failed;
}
