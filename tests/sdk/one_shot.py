"""(a) A one-shot query() of a Read round trip."""

from _sdk import options, run, summarize
from claude_agent_sdk import query


async def main(obs):
    obs["messages"] = []
    async for message in query(
        prompt="Read greeting.txt and tell me what it says",
        options=options(allowed_tools=["Read"]),
    ):
        obs["messages"].append(summarize(message))


run(main)
