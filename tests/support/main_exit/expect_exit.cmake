# cmake -DBINARY=<test binary> -DFILTER=<gtest filter> -DEXPECT=<exit code> -P expect_exit.cmake
execute_process(COMMAND "${BINARY}" "--gtest_filter=${FILTER}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 60)
if(NOT rc STREQUAL "${EXPECT}")
  message(FATAL_ERROR "${BINARY} --gtest_filter=${FILTER} exited ${rc}, not ${EXPECT}:\n${out}")
endif()
message(STATUS "${FILTER}: exit ${rc}, as expected")
