"""Shared by the scenario scripts that tests/it/sdk.rs runs with the real claude-agent-sdk.

Each script drives the CLI named by AGENTLOOP_SDK_CLI through the SDK's own client code (no
wrapper), in the working directory AGENTLOOP_SDK_CWD, and prints one JSON line of
observations on stdout at the end; the CLI's stderr goes to ours, prefixed "cli: ".
"""

import asyncio
import json
import os
import sys
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

# A scenario that takes longer than this has hung: fail with what was seen so far.
TIMEOUT_SECONDS = float(os.environ.get("AGENTLOOP_SDK_TIMEOUT", "90"))


def options(**kwargs: Any) -> ClaudeAgentOptions:
    """Options for the CLI under test, in the scenario's working directory."""
    kwargs.setdefault("max_turns", 5)
    return ClaudeAgentOptions(
        cli_path=os.environ["AGENTLOOP_SDK_CLI"],
        cwd=os.environ["AGENTLOOP_SDK_CWD"],
        stderr=lambda line: print(f"cli: {line}", file=sys.stderr, flush=True),
        **kwargs,
    )


def summarize(message: Any) -> dict[str, Any]:
    """What a test asserts on, from one message the SDK's parser produced."""
    if isinstance(message, AssistantMessage):
        return {
            "type": "assistant",
            "texts": [b.text for b in message.content if isinstance(b, TextBlock)],
            "tool_uses": [
                {"id": b.id, "name": b.name, "input": b.input}
                for b in message.content
                if isinstance(b, ToolUseBlock)
            ],
            "model": message.model,
            "session_id": message.session_id,
            "uuid": message.uuid,
        }
    if isinstance(message, UserMessage):
        content = message.content
        return {
            "type": "user",
            "text": content if isinstance(content, str) else None,
            "texts": [b.text for b in (content if isinstance(content, list) else [])
                      if isinstance(b, TextBlock)],
            "tool_results": [
                {"tool_use_id": b.tool_use_id, "is_error": b.is_error, "content": b.content}
                for b in (content if isinstance(content, list) else [])
                if isinstance(b, ToolResultBlock)
            ],
            "uuid": message.uuid,
        }
    if isinstance(message, ResultMessage):
        return {
            "type": "result",
            "subtype": message.subtype,
            "is_error": message.is_error,
            "num_turns": message.num_turns,
            "session_id": message.session_id,
            "result": message.result,
            "stop_reason": message.stop_reason,
            "permission_denials": message.permission_denials,
            "terminal_reason": message.terminal_reason,
        }
    if isinstance(message, SystemMessage):
        return {"type": "system", "subtype": message.subtype,
                "session_id": message.data.get("session_id")}
    return {"type": type(message).__name__}


def emit(observations: dict[str, Any]) -> None:
    print(json.dumps(observations), flush=True)


def run(main: Any) -> None:
    """Run `main(observations)` under the timeout; print the observations either way."""
    observations: dict[str, Any] = {}

    async def bounded() -> None:
        try:
            await asyncio.wait_for(main(observations), TIMEOUT_SECONDS)
        except BaseException as e:  # noqa: BLE001 - reported, then re-raised
            observations["error"] = f"{type(e).__name__}: {e}"
            emit(observations)
            raise
        emit(observations)

    asyncio.run(bounded())
