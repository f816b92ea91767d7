#!/usr/bin/env bash
# run_libfuzzer.sh FUZZER RUNS SECONDS CORPUS REGRESSIONS
# Runs a libFuzzer harness for RUNS executions (at most SECONDS) on a scratch copy of CORPUS (so the
# source tree is not written), after replaying REGRESSIONS. Prints libFuzzer's last status line
# (executions, coverage edges) and fails on any finding; a crashing input is left in the
# scratch folder, whose path is printed, to be checked in under fuzz/regressions/.
set -euo pipefail
fuzzer=$(realpath "$1") runs=$2 seconds=$3 corpus=$(realpath "$4") regressions=$(realpath -m "$5")
work=$(mktemp -d "${TMPDIR:-/tmp}/detkit_fuzz.XXXXXX")
mkdir -p "$work/corpus"
cp -r "$corpus/." "$work/corpus/" 2>/dev/null || true
inputs=("$work/corpus")
[ -d "$regressions" ] && [ -n "$(ls -A "$regressions")" ] && inputs+=("$regressions")
cd "$work"
status=0
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$fuzzer" -runs="$runs" -max_total_time="$seconds" \
  -max_len=4096 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "${inputs[@]}" \
  >"$work/log.txt" 2>&1 || status=$?
grep -E "^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)" "$work/log.txt" | tail -1 || true
grep -E "^stat::" "$work/log.txt" || true
if [ $status -ne 0 ]; then
  tail -60 "$work/log.txt"
  echo "FINDING: inputs and log kept in $work"
  exit 1
fi
rm -rf "$work"
