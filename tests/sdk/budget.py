"""A spend cap: a one-shot query() with max_budget_usd too small for the first request."""

from _sdk import options, run, summarize
from claude_agent_sdk import ResultMessage, query


async def main(obs):
    obs["messages"] = []
    try:
        async for message in query(prompt="Say hello.", options=options(max_budget_usd=0.0001)):
            obs["messages"].append(summarize(message))
            if isinstance(message, ResultMessage):
                obs["errors"] = getattr(message, "errors", None)
                obs["total_cost_usd"] = message.total_cost_usd
    except Exception as e:  # noqa: BLE001 - the CLI exits non-zero after an error result
        obs["raised"] = type(e).__name__


run(main)
