#!/usr/bin/env bash
# Benchmarks (b) and (c) of issue 3: our Grep tool against the `rg` binary, and our Glob tool
# against `find`, over large trees (by default the cargo registry sources). Each command runs
# once to warm the page cache, then REPS rounds run ours (all threads), ours (1 thread) and
# the reference one after the other, so that load from elsewhere hits all three alike.
# Medians and ratios are printed as a Markdown table for docs/performance.md, after checking
# that both sides found the same matches. Without `rg` (Debian package `ripgrep`) the Grep
# rows are skipped, politely.
#
#   benches/search.sh                       # ~/.cargo/registry/src, REPS=5
#   REPS=9 benches/search.sh DIR[=NAME]...  # Glob `**/NAME` vs `find -name NAME` (NAME: *.rs)
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -gt 0 ] || set -- "$HOME/.cargo/registry/src"
reps=${REPS:-5}
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --quiet --release --example search_bench
bin="$target/release/examples/search_bench"

# Milliseconds of one run of "$@", its stdout kept in $work/out (a file, not /dev/null, which
# rg detects and treats specially).
time_ms() {
  local start end
  start=$(date +%s%N)
  "$@" >"$work/out" || true
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# Time the functions run_ours, run_one and run_ref: one warm-up each, then REPS interleaved
# rounds. Sets ours, one and ref to the medians in milliseconds.
measure() {
  local f
  for f in run_ours run_one run_ref; do time_ms "$f" >/dev/null; done
  for _ in $(seq "$reps"); do
    for f in run_ours run_one run_ref; do echo "$f $(time_ms "$f")"; done
  done >"$work/times"
  ours=$(awk '$1 == "run_ours" {print $2}' "$work/times" | median)
  one=$(awk '$1 == "run_one" {print $2}' "$work/times" | median)
  ref=$(awk '$1 == "run_ref" {print $2}' "$work/times" | median)
}

# The Grep rows: name | pattern | our output_mode | rg flags.
grep_cases='files, literal|Mutex|files_with_matches|-l
files, regex|fn [a-z_]+\(&mut self|files_with_matches|-l
content, regex|impl<T: [A-Z][a-z]+> |content|-n
content, literal|unsafe impl|content|-n'

rows=()
checks=()
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >&2
if command -v rg >/dev/null 2>&1; then
  echo "rg: $(rg --version | head -1)" >&2
else
  echo "rg is not installed (Debian package ripgrep): skipping Grep vs rg" >&2
fi

for arg in "$@"; do
  dir=${arg%%=*}
  glob_name='*.rs'
  [ "$dir" = "$arg" ] || glob_name=${arg#*=}
  corpus=$(cd "$dir" && pwd -P)
  tree=$(basename "$corpus")
  echo "corpus: $corpus ($(find "$corpus" -type f | wc -l) files, $(du -sh "$corpus" | cut -f1))" >&2
  if command -v rg >/dev/null 2>&1; then
    while IFS='|' read -r name pattern mode flags; do
      run_ours() { "$bin" grep "$pattern" "$corpus" "$mode"; }
      run_one() { "$bin" grep "$pattern" "$corpus" "$mode" 1; }
      # shellcheck disable=SC2086 # $flags is a list of rg flags
      run_ref() { rg --no-config $flags -- "$pattern" "$corpus"; }
      measure
      run_ours >"$work/ours.txt"
      run_ref >"$work/rg.txt" || true
      # Compare files, or path:line keys (content lines are cut past 2000 characters by Grep).
      key='s/^([^:]*(:[0-9]+)?).*/\1/'
      [ "$mode" = content ] || key='s/^(.*)$/\1/'
      sed -E "$key" "$work/ours.txt" | sort -u >"$work/ours.keys"
      sed -E "$key" "$work/rg.txt" | sort -u >"$work/rg.keys"
      differing=$(comm -3 "$work/ours.keys" "$work/rg.keys" | wc -l)
      rows+=("| $tree | Grep $name: \`rg --no-config $flags '$pattern'\` | $ours | $one | $ref | $(ratio "$ours" "$ref") |")
      checks+=("$tree, Grep $name: rg $(wc -l <"$work/rg.keys"), Grep $(wc -l <"$work/ours.keys"), $differing differing")
    done <<<"$grep_cases"
  fi

  # Glob vs find, every file called NAME. Glob also stats each match (to list newest first)
  # and skips hidden and gitignored files; find lists everything.
  run_ours() { "$bin" glob "**/$glob_name" "$corpus"; }
  run_one() { "$bin" glob "**/$glob_name" "$corpus" 1; }
  run_ref() { find "$corpus" -type f -name "$glob_name"; }
  measure
  rows+=("| $tree | Glob \`**/$glob_name\` vs \`find -type f -name '$glob_name'\` | $ours | $one | $ref | $(ratio "$ours" "$ref") |")
  run_ours >"$work/ours.txt"
  shown=$(grep -c '^/' "$work/ours.txt" || true)
  rest=$(sed -nE 's/^\(([0-9]+) more files not shown.*/\1/p' "$work/ours.txt")
  visible=$(find "$corpus" -mindepth 1 -name '.*' -prune -o -type f -name "$glob_name" -print | wc -l)
  checks+=("$tree, Glob: Glob $((shown + ${rest:-0})), find $(run_ref | wc -l) in all and $visible outside hidden paths")
done

echo
echo "| tree | benchmark | ours, ms (median of $reps) | ours, 1 thread | reference, ms | ratio ours / reference |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo
printf -- '- %s\n' "${checks[@]}"
