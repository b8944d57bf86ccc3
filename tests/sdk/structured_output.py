"""Structured output: a one-shot query() with output_format, the SDK's json_schema option."""

from _sdk import options, run, summarize
from claude_agent_sdk import ResultMessage, query

SCHEMA = {
    "type": "object",
    "properties": {
        "file_count": {"type": "number"},
        "has_tests": {"type": "boolean"},
    },
    "required": ["file_count", "has_tests"],
}


async def main(obs):
    obs["messages"] = []
    async for message in query(
        prompt="How many files are here, and are any of them tests? Answer in the required format.",
        options=options(output_format={"type": "json_schema", "schema": SCHEMA}),
    ):
        obs["messages"].append(summarize(message))
        if isinstance(message, ResultMessage):
            obs["structured_output"] = message.structured_output


run(main)
