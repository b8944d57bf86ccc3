#!/usr/bin/env bash
# Benchmarks (b) and (c) of issue 3: our Grep tool against the `rg` binary, and our Glob tool
# against `find`, over one large tree (by default the cargo registry sources). Each command
# runs once to warm the page cache, then REPS times; medians and ratios are printed as a
# Markdown table for docs/performance.md, after checking that both sides found the same
# matches. Without `rg` (Debian package `ripgrep`) the Grep rows are skipped, politely.
#
#   benches/search.sh                       # CORPUS=~/.cargo/registry/src REPS=5
#   CORPUS=/some/tree REPS=9 benches/search.sh
set -euo pipefail
cd "$(dirname "$0")/.."

corpus=$(cd "${CORPUS:-$HOME/.cargo/registry/src}" && pwd -P)
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

# Median milliseconds of REPS runs of "$@", after one warm-up run.
median_ms() {
  time_ms "$@" >/dev/null
  for _ in $(seq "$reps"); do time_ms "$@"; done | sort -n |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

rows=()
checks=()

echo "corpus: $corpus ($(find "$corpus" -type f | wc -l) files, $(du -sh "$corpus" | cut -f1))" >&2
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" >&2

if command -v rg >/dev/null 2>&1; then
  echo "rg: $(rg --version | head -1)" >&2
  # name | pattern | our output_mode | rg flags | how to reduce an output line to its match key
  while IFS='|' read -r name pattern mode flags; do
    ours=$(median_ms "$bin" grep "$pattern" "$corpus" "$mode")
    "$bin" grep "$pattern" "$corpus" "$mode" >"$work/ours.txt"
    one=$(median_ms "$bin" grep "$pattern" "$corpus" "$mode" 1)
    # shellcheck disable=SC2086 # $flags is a list of rg flags
    theirs=$(median_ms rg --no-config $flags -- "$pattern" "$corpus")
    # shellcheck disable=SC2086
    rg --no-config $flags -- "$pattern" "$corpus" >"$work/rg.txt" || true
    # Compare files, or path:line keys (content lines are cut past 2000 characters by Grep).
    key='s/^([^:]*(:[0-9]+)?).*/\1/'
    [ "$mode" = content ] || key='s/^(.*)$/\1/'
    sed -E "$key" "$work/ours.txt" | sort -u >"$work/ours.keys"
    sed -E "$key" "$work/rg.txt" | sort -u >"$work/rg.keys"
    same=$(comm -3 "$work/ours.keys" "$work/rg.keys" | wc -l)
    n=$(wc -l <"$work/rg.keys")
    rows+=("| Grep $name (\`rg --no-config $flags '$pattern'\`) | $ours | $one | $theirs | $(ratio "$ours" "$theirs") |")
    checks+=("Grep $name: $n matches from rg, $(wc -l <"$work/ours.keys") from Grep, $same differing")
  done <<'EOF'
files, literal|Mutex|files_with_matches|-l
files, regex|fn [a-z_]+\(&mut self|files_with_matches|-l
content, regex|impl<T: [A-Z][a-z]+> |content|-n
content, literal|unsafe impl|content|-n
EOF
else
  echo "rg is not installed (Debian package ripgrep): skipping Grep vs rg" >&2
fi

# Glob vs find: the same tree, every Rust file. Glob also stats each match (newest first) and
# skips hidden and gitignored files; find lists everything.
ours=$(median_ms "$bin" glob '**/*.rs' "$corpus")
one=$(median_ms "$bin" glob '**/*.rs' "$corpus" 1)
theirs=$(median_ms find "$corpus" -type f -name '*.rs')
rows+=("| Glob \`**/*.rs\` vs \`find -type f -name '*.rs'\` | $ours | $one | $theirs | $(ratio "$ours" "$theirs") |")
"$bin" glob '**/*.rs' "$corpus" >"$work/ours.txt"
shown=$(grep -c '^/' "$work/ours.txt" || true)
rest=$(sed -nE 's/^\(([0-9]+) more files not shown.*/\1/p' "$work/ours.txt")
visible=$(find "$corpus" -type f -name '*.rs' -not -path '*/.*' | wc -l)
checks+=("Glob: $((shown + ${rest:-0})) files from Glob; find: $(find "$corpus" -type f -name '*.rs' | wc -l) in all, $visible outside hidden paths")

echo
echo "| benchmark | ours, ms (median of $reps) | ours, 1 thread | reference, ms | ratio ours / reference |"
echo "| --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo
printf -- '- %s\n' "${checks[@]}"
