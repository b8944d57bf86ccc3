"""(e) client.interrupt() during a slow reply, then another prompt that works."""

import asyncio

from _sdk import options, run, summarize
from claude_agent_sdk import AssistantMessage, ClaudeSDKClient, ResultMessage

# The mock holds the rest of the slow reply far longer than this.
FIRST_OUTPUT_WAIT = 3.0


async def main(obs):
    async with ClaudeSDKClient(options=options()) as client:
        await client.query("Tell me a very long story")
        first = []
        seen_assistant = asyncio.Event()

        async def drain():
            async for message in client.receive_response():
                first.append(summarize(message))
                if isinstance(message, AssistantMessage):
                    seen_assistant.set()

        reader = asyncio.create_task(drain())
        # Interrupt once the reply has visibly started (a CLI may only emit the assistant
        # message once it is whole: then after a fixed wait, with the reply still stalled).
        try:
            await asyncio.wait_for(seen_assistant.wait(), FIRST_OUTPUT_WAIT)
        except asyncio.TimeoutError:
            pass
        await client.interrupt()
        obs["interrupt_returned"] = True
        await reader
        obs["interrupted_turn"] = first

        await client.query("Say hi")
        obs["second_turn"] = [summarize(m) async for m in client.receive_response()]


run(main)
