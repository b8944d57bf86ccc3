"""(b) A ClaudeSDKClient session with two prompts on the same conversation."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient


async def main(obs):
    obs["turns"] = []
    async with ClaudeSDKClient(options=options()) as client:
        for prompt in ["My name is Ada. Please remember it.", "What is my name?"]:
            await client.query(prompt)
            obs["turns"].append([summarize(m) async for m in client.receive_response()])


run(main)
