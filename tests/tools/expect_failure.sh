#!/usr/bin/env bash
# expect_failure.sh REGEX COMMAND...: passes when COMMAND exits non-zero and its output matches REGEX.
regex="$1"; shift
output=$("$@" 2>&1) && { echo "expected failure, got success: $output"; exit 1; }
echo "$output"
echo "$output" | grep -Eq -- "$regex" || { echo "output does not match: $regex"; exit 1; }
