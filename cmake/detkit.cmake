# Helpers: one library per folder, one test binary per folder, one precompiled torch header.

# Everything that includes torch reuses this single precompiled header (compiled once, ~40 s).
add_library(detkit_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cpp)
target_link_libraries(detkit_torch_pch PUBLIC torch)
target_precompile_headers(detkit_torch_pch PRIVATE <torch/torch.h>)

set(DETKIT_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH "Shared data and fixtures (read-only)")

# Python with torchvision, the parity oracle: DETKIT_PYTHON (cmake/find_torch.cmake) where it
# imports torchvision; empty otherwise (the oracle tests then skip, saying so).
set(DETKIT_ORACLE_PYTHON "" CACHE FILEPATH "Python interpreter that imports torchvision")
if(NOT DETKIT_ORACLE_PYTHON)
  execute_process(COMMAND ${DETKIT_PYTHON} -c "import torchvision" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(DETKIT_ORACLE_PYTHON ${DETKIT_PYTHON})
  endif()
endif()
message(STATUS "detkit parity oracle python: ${DETKIT_ORACLE_PYTHON}")

# detkit_add_library(<name> SOURCES ... [DEPS ...] [TORCH])
# Creates target detkit_<name>; include paths are rooted at the repository (#include "detkit/...").
function(detkit_add_library name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_library(detkit_${name} ${ARG_SOURCES})
  target_include_directories(detkit_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
                                                   $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # Installed as detkit::<name> (cmake/install.cmake).
  set_target_properties(detkit_${name} PROPERTIES EXPORT_NAME ${name})
  set_property(GLOBAL APPEND PROPERTY DETKIT_LIBRARIES detkit_${name})
  target_link_libraries(detkit_${name} PUBLIC ${ARG_DEPS})
  if(ARG_TORCH)
    target_link_libraries(detkit_${name} PUBLIC torch)
    target_precompile_headers(detkit_${name} REUSE_FROM detkit_torch_pch)
  endif()
endfunction()

# detkit_add_test(<name> SOURCES ... [DEPS ...] [LABELS ...] [TORCH])
function(detkit_add_test name)
  cmake_parse_arguments(ARG "TORCH" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(test_${name} ${ARG_SOURCES})
  target_link_libraries(test_${name} PRIVATE ${ARG_DEPS} GTest::gtest detkit_test_main)
  # The source and shared folders are the configured ones unless $DETKIT_SOURCE_DIR or
  # $DETKIT_SHARED_DIR name others at run time (scripts/gpu_check.sh runs test binaries built on
  # another machine, with the fixtures in the checkout's shared/).
  target_compile_definitions(test_${name} PRIVATE
    "DETKIT_SOURCE_DIR=(::getenv(\"DETKIT_SOURCE_DIR\") ? ::getenv(\"DETKIT_SOURCE_DIR\") : \"${PROJECT_SOURCE_DIR}\")"
    "DETKIT_SHARED_DIR=(::getenv(\"DETKIT_SHARED_DIR\") ? ::getenv(\"DETKIT_SHARED_DIR\") : \"${DETKIT_SHARED_DIR}\")"
    DETKIT_ORACLE_PYTHON="${DETKIT_ORACLE_PYTHON}")
  if(ARG_TORCH)
    target_link_libraries(test_${name} PRIVATE torch)
    target_precompile_headers(test_${name} REUSE_FROM detkit_torch_pch)
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  # One CTest test per GoogleTest suite (cmake/test_suites.cmake), with the first label; further
  # labels go on the test folder (one test binary per folder, so they reach exactly its tests).
  list(POP_FRONT ARG_LABELS first_label)
  detkit_add_test_suites(test_${name} ${name} ${first_label})
  if(ARG_LABELS)
    set_property(DIRECTORY APPEND PROPERTY LABELS ${ARG_LABELS})
  endif()
endfunction()
