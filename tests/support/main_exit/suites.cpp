// Suites whose runs the detkit test main (tests/support/gtest_main.cpp) must report by exit code:
// 77 (CTest: skipped) only where every test it ran was skipped.
#include <gtest/gtest.h>

TEST(AllSkipped, First) { GTEST_SKIP() << "skipped on purpose"; }
TEST(AllSkipped, Second) { GTEST_SKIP() << "skipped on purpose"; }

TEST(OnePassedOneSkipped, Passes) { SUCCEED(); }
TEST(OnePassedOneSkipped, Skips) { GTEST_SKIP() << "skipped on purpose"; }

TEST(OneFailedOneSkipped, Fails) { ADD_FAILURE() << "failed on purpose"; }
TEST(OneFailedOneSkipped, Skips) { GTEST_SKIP() << "skipped on purpose"; }
