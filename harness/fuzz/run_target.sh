#!/bin/sh
# Runs one libFuzzer program over its seed corpus and regressions (docs/fuzzing.md), for the CTest
# tests of the fuzz build and for scripts/fuzz:
#   run_target.sh FUZZER TARGET FUZZ_DIR WORK_DIR (--time SECONDS | --runs N) [LIBFUZZER_OPTION...]
# FUZZ_DIR is harness/fuzz (corpus/TARGET, regressions/TARGET, dict/TARGET.dict when there is one);
# new inputs go to WORK_DIR/corpus/TARGET (the checked-in corpus is only read), findings to
# WORK_DIR/crashes/TARGET, the log to WORK_DIR/logs/TARGET.log. Prints one line,
#   TARGET: N executions in S s (R/s), C crashes
# and fails when there is a finding.
set -eu
fuzzer=$1 target=$2 fuzz_dir=$3 work=$4 mode=$5 amount=$6
shift 6
case $mode in
  --time) limit="-max_total_time=$amount" ;;
  --runs) limit="-runs=$amount" ;;
  *) echo "run_target.sh: expected --time SECONDS or --runs N, got '$mode'" >&2; exit 2 ;;
esac

new=$work/corpus/$target
crashes=$work/crashes/$target
log=$work/logs/$target.log
mkdir -p "$new" "$crashes" "$work/logs"
set -- "$@" "$new" "$fuzz_dir/corpus/$target"
[ -d "$fuzz_dir/regressions/$target" ] && set -- "$@" "$fuzz_dir/regressions/$target"
[ -f "$fuzz_dir/dict/$target.dict" ] && set -- "-dict=$fuzz_dir/dict/$target.dict" "$@"

# The dataset and suite targets write files: in memory where there is a tmpfs.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi

# Findings: crash-*, leak-*, timeout-*, oom-*. A slow-unit-* (one execution above 10 s, which a
# loaded machine can cause) is reported but is not one: rerun it to see.
count() { ls "$crashes" | grep -c -E "^$1" || true; }
before=$(count "(crash|leak|timeout|oom)-")
slow_before=$(count "slow-unit-")
status=0
# A finding stops libFuzzer at once; inputs slower than 10 s are findings too (timeouts).
"$fuzzer" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" \
  "$limit" "$@" >"$log" 2>&1 || status=$?
found=$(($(count "(crash|leak|timeout|oom)-") - before))
slow=$(($(count "slow-unit-") - slow_before))

executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
seconds=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
echo "$target: ${executions:-?} executions in ${seconds:-?} s (${rate:-?}/s), $found crashes"
[ "$slow" -gt 0 ] && echo "$target: $slow slow unit(s) above 10 s in $crashes (not findings: rerun)"
if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
  tail -n 40 "$log"
  echo "$target: libFuzzer exited with $status; the log is $log"
  [ "$found" -ne 0 ] && ls -t "$crashes" | grep -E "^(crash|leak|timeout|oom)-" |
    head -n "$found" | sed "s|^|$target: finding $crashes/|"
  exit 1
fi
exit 0
