# detkit_add_test_suites(<target> <folder> <label>): one CTest test per GoogleTest suite of a test
# binary, named <folder>.<Suite>, running `<binary> --gtest_filter=<Suite>.*`. Each process loads
# libtorch once (about 1 s, 2 s under ASan), so a suite's tests share one start rather than paying
# it each. The suites are listed when ctest starts (as gtest_discover_tests' PRE_TEST mode does),
# again only after the binary changed.
set(DETKIT_WRITE_SUITE_TESTS "${CMAKE_CURRENT_LIST_DIR}/write_suite_tests.cmake")

function(detkit_add_test_suites target folder label)
  set(listing "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(loader "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_loader.cmake")
  file(GENERATE OUTPUT "${loader}" CONTENT
"set(_binary [==[$<TARGET_FILE:${target}>]==])
set(_listing [==[${listing}]==])
if(NOT EXISTS \"\${_binary}\")
  add_test([==[${folder}.NOT_BUILT]==] [==[${folder}.NOT_BUILT]==])
elseif(NOT EXISTS \"\${_listing}\" OR \"\${_binary}\" IS_NEWER_THAN \"\${_listing}\")
  include([==[${DETKIT_WRITE_SUITE_TESTS}]==])
  detkit_write_suite_tests(\"\${_binary}\" \"\${_listing}\" [==[${folder}]==] [==[${label}]==]
                           [==[${CMAKE_CURRENT_BINARY_DIR}]==])
endif()
if(EXISTS \"\${_listing}\")
  include(\"\${_listing}\")
endif()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${loader}")
endfunction()
