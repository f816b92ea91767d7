# -DDETKIT_SANITIZE=address,undefined (any of address, undefined, leak, thread): every target of
# the build is compiled and linked with those sanitizers. Such a build holds the libraries and
# the tests named by DETKIT_SANITIZE_TESTS (tests/<folder>) plus the fuzz replays; the tools,
# benchmarks and install rules are left out (scripts/sanitize.sh builds and runs it; CI runs that).
set(DETKIT_SANITIZE "" CACHE STRING "Sanitizers for every target: a comma list of address, undefined, leak, thread")
set(DETKIT_SANITIZE_TESTS "utils;config;structures;ops;data;checkpoint" CACHE STRING
    "Test folders (tests/<name>) built and run in a sanitizer build")

if(DETKIT_SANITIZE)
  string(REPLACE "," ";" _sanitizers "${DETKIT_SANITIZE}")
  foreach(s ${_sanitizers})
    if(NOT s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "DETKIT_SANITIZE: '${s}' is not one of address, undefined, leak, thread "
                          "(got DETKIT_SANITIZE=${DETKIT_SANITIZE})")
    endif()
  endforeach()
  if("thread" IN_LIST _sanitizers AND ("address" IN_LIST _sanitizers OR "leak" IN_LIST _sanitizers))
    message(FATAL_ERROR "DETKIT_SANITIZE: thread cannot be combined with address or leak "
                        "(got DETKIT_SANITIZE=${DETKIT_SANITIZE})")
  endif()
  # Reports stop the test that caused them (-fno-sanitize-recover), with frames and lines (-g1);
  # -O1, as the sanitizers' documentation advises, after the build type's -O3.
  add_compile_options(-fsanitize=${DETKIT_SANITIZE} -fno-sanitize-recover=all
                      -fno-omit-frame-pointer -g1 -O1)
  add_link_options(-fsanitize=${DETKIT_SANITIZE})
  message(STATUS "detkit sanitizers: ${DETKIT_SANITIZE}; tests: ${DETKIT_SANITIZE_TESTS} and the fuzz replays")
endif()
