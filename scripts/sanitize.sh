#!/usr/bin/env bash
# The sanitizer step of CI: builds detkit's parsers, structures, ops, data and checkpoint libraries
# with their unit tests and the fuzz replays under AddressSanitizer + UndefinedBehaviorSanitizer
# (-DDETKIT_SANITIZE=address,undefined, in ./build-sanitize) and runs those tests; any report,
# leaks included, fails the test that caused it. Needs what ./scripts/setup.sh installs.
# Extra arguments go to ctest (e.g. -R Coco).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Release -DDETKIT_SANITIZE=address,undefined
cmake --build build-sanitize
echo "sanitizer build: $(( $(date +%s) - start )) s"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# data.Sizes/TestMappingVsPil maps coco_tiny at many sizes against PIL (106 s under the
# sanitizers, a quarter of the step's test time): the mapper's code runs under them in the
# other data tests, so its sizes are checked in the plain build only.
ctest --test-dir build-sanitize --output-on-failure -j2 -E '^data\.Sizes/TestMappingVsPil' "$@"
echo "sanitizer step: $(( $(date +%s) - start )) s"
