"""pytest plugin (``-p e2e_plugin``) that points claude-agent-sdk-python's e2e suite at another CLI.

The SDK has no environment variable for the CLI path and prefers the binary it bundles, so
this replaces ``SubprocessCLITransport._find_cli`` (what the transport calls when
``ClaudeAgentOptions.cli_path`` is unset, as in every e2e test) with one returning
``$AGENTLOOP_E2E_CLI``. The suite's ``api_key`` fixture only needs ``ANTHROPIC_API_KEY`` set;
the mock model accepts any key, so it defaults to ``dummy``.

With ``$AGENTLOOP_E2E_CAPTURE`` set to a directory, each launch goes through ``tee_cli.py``,
which records the CLI's argv, stdin, stdout and stderr under ``CAPTURE/<test name>/``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from claude_agent_sdk._internal.transport import subprocess_cli

_HERE = Path(__file__).resolve().parent


def _cli() -> str:
    cli = os.environ.get("AGENTLOOP_E2E_CLI")
    if not cli:
        raise pytest.UsageError("e2e_plugin: set AGENTLOOP_E2E_CLI to the CLI under test")
    if not os.access(cli, os.X_OK):
        raise pytest.UsageError(f"e2e_plugin: {cli} is not an executable file")
    return cli


def pytest_configure(config: pytest.Config) -> None:
    """Install the replacement before any test builds a transport."""
    cli = _cli()
    os.environ.setdefault("ANTHROPIC_API_KEY", "dummy")
    capture = os.environ.get("AGENTLOOP_E2E_CAPTURE")
    if capture:
        os.environ["AGENTLOOP_E2E_REAL_CLI"] = cli
        cli = str(_HERE / "tee_cli.py")

    def find_cli(self: subprocess_cli.SubprocessCLITransport) -> str:
        return cli

    subprocess_cli.SubprocessCLITransport._find_cli = find_cli  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Name the capture directory after the test about to run (the CLI inherits the variable)."""
    capture = os.environ.get("AGENTLOOP_E2E_CAPTURE")
    if capture:
        name = re.sub(r"[^\w.-]+", "_", item.nodeid.split("/")[-1])
        os.environ["AGENTLOOP_E2E_CAPTURE_DIR"] = str(Path(capture) / name)
