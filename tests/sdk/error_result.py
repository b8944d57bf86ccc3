"""(i) An API error ends the query: the error result is yielded, then the SDK raises its
ResultError carrying it, because the CLI exits non-zero after an error result."""

from _sdk import options, run, summarize
from claude_agent_sdk import ResultError, query


async def main(obs):
    obs["messages"] = []
    try:
        async for message in query(prompt="Reply with: pong", options=options()):
            obs["messages"].append(summarize(message))
    except ResultError as e:
        obs["raised"] = {
            "type": "ResultError",
            "exit_code": e.exit_code,
            "subtype": e.subtype,
            "result": e.result,
            "terminal_reason": e.terminal_reason,
            "api_error_status": e.api_error_status,
            "text": str(e),
        }


run(main)
