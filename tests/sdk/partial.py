"""(g) include_partial_messages: the reply's text also arrives as stream events."""

from _sdk import options, run
from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent, SystemMessage, TextBlock, query


async def main(obs):
    obs["events"] = []
    obs["texts"] = []
    obs["statuses"] = []
    async for message in query(
        prompt="Say hello",
        options=options(include_partial_messages=True),
    ):
        if isinstance(message, StreamEvent):
            obs["events"].append(message.event)
        elif isinstance(message, SystemMessage) and message.subtype == "status":
            obs["statuses"].append(message.data.get("status"))
        elif isinstance(message, AssistantMessage):
            obs["texts"] += [b.text for b in message.content if isinstance(b, TextBlock)]
        elif isinstance(message, ResultMessage):
            obs["result"] = message.subtype


run(main)
