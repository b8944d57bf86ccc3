#!/usr/bin/env bash
# Runs claude-agent-sdk-python's own e2e suite against CLI_PATH with the local mock model.
#
#   tests/sdk/upstream/run.sh CLI_PATH [pytest args...]
#
# The suite is taken from $AGENTLOOP_E2E_SUITE (a checkout of claude-agent-sdk-python, or its
# e2e-tests/ directory), else extracted from the git mirror $AGENTLOOP_E2E_MIRROR (default
# /work/.mirror/anthropics+claude-agent-sdk-python/repo) into a scratch directory; nothing is
# copied into this repository. Beside e2e-tests/ the scratch checkout holds the repository's
# src/ and tests/, which the structured-output tests explore from the working directory.
#
# Each run gets a fresh HOME and TMPDIR under the scratch directory, the mock on a free port
# (ANTHROPIC_BASE_URL), ANTHROPIC_API_KEY=dummy, and the SDK venv's pytest with e2e_plugin.py
# (which makes the SDK launch CLI_PATH). Output: pytest's per-test lines and closing summary.
#
# Environment:
#   AGENTLOOP_E2E_SUITE    a directory to take the suite from instead of the mirror
#   AGENTLOOP_E2E_MIRROR   the git directory to extract the suite from
#   AGENTLOOP_E2E_CAPTURE  a directory: record every CLI launch (argv, stdin, stdout, stderr)
#                          under CAPTURE/<test>/ (see tee_cli.py)
#   AGENTLOOP_E2E_KEEP=1   keep the scratch directory (its requests.jsonl logs every request
#                          the mock answered, with the reply)
#   AGENTLOOP_E2E_TIMEOUT  per-test timeout in seconds (default 180)
#
# A developer tool: the mirror is not available in CI, so .ci/run does not call this.
set -euo pipefail

if [ $# -lt 1 ]; then
  sed -n '2,4p' "$0" >&2
  exit 2
fi
cli="$(realpath "$1")"
shift
[ -x "$cli" ] || { echo "run.sh: $cli is not executable" >&2; exit 2; }

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
python="$repo/.ci/cache/sdk-venv/bin/python"
if [ ! -x "$python" ]; then
  "$repo/.ci/install-sdk"
fi
# The suite needs pytest (and anyio's plugin, which the SDK's anyio ships); pytest-timeout
# keeps one hung test from stalling the run.
if ! "$python" -c 'import pytest, pytest_timeout' 2>/dev/null; then
  echo "run.sh: installing pytest and pytest-timeout into the SDK venv" >&2
  "$python" -m pip install -q --disable-pip-version-check pytest pytest-timeout
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/sdk-e2e.XXXXXX")"
mock_pid=""
cleanup() {
  if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
  if [ "${AGENTLOOP_E2E_KEEP:-}" = 1 ]; then
    echo "run.sh: kept $work (requests: $work/requests.jsonl)" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

suite="$work/suite"
mkdir -p "$suite" "$work/home" "$work/tmp"
if [ -n "${AGENTLOOP_E2E_SUITE:-}" ]; then
  src="$(realpath "$AGENTLOOP_E2E_SUITE")"
  if [ -d "$src/e2e-tests" ]; then
    for part in e2e-tests src tests; do
      if [ -d "$src/$part" ]; then cp -r "$src/$part" "$suite/"; fi
    done
  else
    cp -r "$src" "$suite/e2e-tests"
  fi
else
  mirror="${AGENTLOOP_E2E_MIRROR:-/work/.mirror/anthropics+claude-agent-sdk-python/repo}"
  git -C "$mirror" archive HEAD e2e-tests src tests | tar -x -C "$suite"
fi
# Our own configuration, so the checkout's pyproject.toml (which puts its src/ on sys.path,
# shadowing the installed SDK) is not read.
cat >"$suite/pytest.ini" <<'EOF'
[pytest]
addopts = --import-mode=importlib -p anyio -p e2e_plugin
EOF

python3 "$here/mock_server.py" --port-file "$work/port" --log "$work/requests.jsonl" &
mock_pid=$!
for _ in $(seq 100); do
  [ -s "$work/port" ] && break
  sleep 0.1
done
[ -s "$work/port" ] || { echo "run.sh: the mock did not start" >&2; exit 1; }
port="$(cat "$work/port")"

cd "$suite"
set +e
env -u ANTHROPIC_AUTH_TOKEN -u CLAUDECODE -u CLAUDE_CONFIG_DIR -u AGENTLOOP_HOME \
  HOME="$work/home" TMPDIR="$work/tmp" \
  ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=dummy \
  AGENTLOOP_E2E_CLI="$cli" PYTHONPATH="$here" PYTHONDONTWRITEBYTECODE=1 \
  "$python" -m pytest e2e-tests -v -rfE --tb=short -p no:cacheprovider \
  --timeout="${AGENTLOOP_E2E_TIMEOUT:-180}" "$@"
status=$?
set -e
exit "$status"
