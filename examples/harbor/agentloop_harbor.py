"""Run agentloop as an installed agent of Harbor, the Terminal-Bench harness.

    harbor run -d terminal-bench@2.0 \
        --agent-import-path agentloop_harbor:AgentloopAgent \
        --model anthropic/claude-sonnet-4-5 \
        --agent-kwarg binary=$(command -v agentloop)

Harbor starts each task's container, calls ``install`` (which uploads the agentloop binary
given by ``binary``, else the one on the host's PATH), then ``run`` with the task's
instruction, then ``populate_context_post_run``. agentloop runs headless in the task's working
directory with every tool allowed (the container is the boundary), writes its stream-json
output and its ``--trace=jsonl`` trace under the agent's log directory, and the token counts
and the cost of the run are read back from the output's ``result`` line.

The command line and the reading of the output are plain functions (``run_command``,
``summarize``), tested without Harbor (``test_agentloop_harbor.py``, and
``tests/it/harbor.rs``, which runs the command this module builds against a local Messages
API). Harbor itself is imported only when the agent class is defined, so the functions work
without it.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterable, Optional

# Where the binary goes in the container, and where the run's files go (Harbor copies the
# agent's log directory out of the container).
INSTALLED_BINARY = "/installed-agent/agentloop"
LOG_DIR = "/logs/agent"
OUTPUT_FILE = "agentloop.jsonl"
TRACE_FILE = "trace.jsonl"

# The credentials and endpoints agentloop reads, passed to the container's process
# environment, never on its command line.
PASSED_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OTEL_TRACES_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "TRACEPARENT",
)


def model_flag(model_name: Optional[str]) -> Optional[str]:
    """agentloop's ``--model`` for Harbor's ``provider/model`` name.

    ``anthropic/claude-sonnet-4-5`` is ``claude-sonnet-4-5`` (the Messages API); ``openai/NAME``
    is ``chat:NAME`` (Chat Completions at ``OPENAI_BASE_URL``); a name without a provider, or
    one agentloop already understands (``chat:…``, ``responses:…``), is kept.
    """
    if not model_name:
        return None
    provider, _, name = model_name.partition("/")
    if not name or ":" in model_name:
        return model_name
    if provider == "anthropic":
        return name
    if provider == "openai":
        return f"chat:{name}"
    return model_name


@dataclass(frozen=True)
class RunOptions:
    """What the command line of one run is made of."""

    binary: str = INSTALLED_BINARY
    model: Optional[str] = None
    max_turns: Optional[int] = None
    max_budget_usd: Optional[float] = None
    session_id: Optional[str] = None
    log_dir: str = LOG_DIR


def run_command(instruction: str, options: RunOptions = RunOptions()) -> str:
    """The shell command that runs ``instruction`` headless in the current directory.

    Every argument is quoted, so an instruction holding quotes, ``$(…)`` or newlines reaches
    agentloop as written. The stream-json output goes to ``OUTPUT_FILE`` and the trace to
    ``TRACE_FILE`` in ``options.log_dir``; agentloop's exit code is the command's.
    """
    log_dir = PurePosixPath(options.log_dir)
    argv = [
        options.binary,
        "-p",
        instruction,
        "--output-format",
        "stream-json",
        "--permission-mode",
        "bypassPermissions",
        "--trace=jsonl",
        "--trace-file",
        str(log_dir / TRACE_FILE),
    ]
    model = model_flag(options.model)
    if model:
        argv += ["--model", model]
    if options.max_turns is not None:
        argv += ["--max-turns", str(options.max_turns)]
    if options.max_budget_usd is not None:
        argv += ["--max-budget-usd", repr(float(options.max_budget_usd))]
    if options.session_id:
        argv += ["--session-id", options.session_id]
    command = " ".join(shlex.quote(a) for a in argv)
    output = shlex.quote(str(log_dir / OUTPUT_FILE))
    return f"mkdir -p {shlex.quote(str(log_dir))} && {command} < /dev/null > {output}"


@dataclass(frozen=True)
class Summary:
    """What a run's stream-json output says of it: its result line's counts."""

    subtype: Optional[str]
    is_error: bool
    num_turns: int
    input_tokens: int
    cache_tokens: int
    output_tokens: int
    cost_usd: float


def summarize(lines: Iterable[str]) -> Optional[Summary]:
    """The summary of the last ``result`` line of stream-json output; ``None`` without one.

    Input tokens count the cache reads and writes too, as Harbor's ``n_input_tokens`` does;
    ``cache_tokens`` are the cache reads. Lines that are not JSON (a cut last line) are skipped.
    """
    last = None
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "result":
            last = value
    if last is None:
        return None
    usage = last.get("usage") or {}
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    return Summary(
        subtype=last.get("subtype"),
        is_error=bool(last.get("is_error")),
        num_turns=int(last.get("num_turns") or 0),
        input_tokens=int(usage.get("input_tokens") or 0) + read + written,
        cache_tokens=read,
        output_tokens=int(usage.get("output_tokens") or 0),
        cost_usd=float(last.get("total_cost_usd") or 0.0),
    )


def _define_agent():
    """The Harbor agent class, when Harbor is installed."""
    import os
    from pathlib import Path

    from harbor.agents.installed.base import BaseInstalledAgent

    class AgentloopAgent(BaseInstalledAgent):
        """agentloop, installed into the task's container and run headless."""

        def __init__(self, *args, binary: Optional[str] = None, max_turns: Optional[int] = None, **kwargs):
            super().__init__(*args, **kwargs)
            self._binary = binary or shutil.which("agentloop")
            self._max_turns = int(max_turns) if max_turns is not None else None

        @staticmethod
        def name() -> str:
            return "agentloop"

        def get_version_command(self) -> Optional[str]:
            return f"{INSTALLED_BINARY} --version"

        async def install(self, environment) -> None:
            if not self._binary:
                raise RuntimeError("no agentloop binary: pass --agent-kwarg binary=PATH or put agentloop on PATH")
            await environment.upload_file(source_path=Path(self._binary), target_path=INSTALLED_BINARY)
            await self.exec_as_root(environment, f"chmod 755 {INSTALLED_BINARY}")

        async def run(self, instruction: str, environment, context) -> None:
            options = RunOptions(model=self.model_name, max_turns=self._max_turns)
            env = {name: os.environ[name] for name in PASSED_VARIABLES if name in os.environ}
            await self.exec_as_agent(environment, run_command(self.render_instruction(instruction), options), env=env)

        def populate_context_post_run(self, context) -> None:
            output = self.logs_dir / OUTPUT_FILE
            if not output.exists():
                return
            summary = summarize(output.read_text(errors="replace").splitlines())
            if summary is None:
                return
            context.n_input_tokens = summary.input_tokens
            context.n_cache_tokens = summary.cache_tokens
            context.n_output_tokens = summary.output_tokens
            context.cost_usd = summary.cost_usd

    return AgentloopAgent


try:
    AgentloopAgent = _define_agent()
except ImportError:  # Harbor is not installed: the functions above still work.
    AgentloopAgent = None
