# Run by ctest (cmake/test_suites.cmake): lists a test binary's GoogleTest suites and writes one
# add_test per suite to <listing>. `--gtest_list_tests` prints each suite as an unindented
# "Suite." line (typed and parameterised ones as "Prefix/Suite/0.  # TypeParam = ..."), its tests
# indented below it.
function(detkit_write_suite_tests binary listing folder label working_dir)
  execute_process(COMMAND "${binary}" --gtest_list_tests
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "listing the tests of ${binary} failed (${rc}):\n${out}${err}")
  endif()
  string(REPLACE ";" "," out "${out}")  # suite names hold no ';', a parameter's text may
  string(REPLACE "\n" ";" lines "${out}")
  set(content "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
      set(suite "${CMAKE_MATCH_1}")
      if(suite MATCHES "(^|/)DISABLED_")
        continue()
      endif()
      set(test "${folder}.${suite}")
      string(APPEND content
        "add_test([==[${test}]==] [==[${binary}]==] [==[--gtest_filter=${suite}.*]==])\n"
        "set_tests_properties([==[${test}]==] PROPERTIES LABELS [==[${label}]==] "
        "SKIP_RETURN_CODE 77 WORKING_DIRECTORY [==[${working_dir}]==])\n")
    endif()
  endforeach()
  if(content STREQUAL "")
    message(FATAL_ERROR "${binary} --gtest_list_tests named no test suite:\n${out}")
  endif()
  file(WRITE "${listing}" "${content}")
endfunction()
