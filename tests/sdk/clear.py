"""(i) `/clear` in a ClaudeSDKClient session: a ConversationResetMessage for the old session,
a result of no turns in a new one, and the next prompt starts there with an empty history."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, ConversationResetMessage


async def main(obs):
    async with ClaudeSDKClient(options=options(max_turns=1)) as client:
        await client.query("Reply with exactly: one")
        obs["first"] = [summarize(m) async for m in client.receive_response()]
        await client.query("/clear")
        cleared = []
        async for message in client.receive_response():
            if isinstance(message, ConversationResetMessage):
                cleared.append({"type": "conversation_reset", "session_id": message.session_id,
                                "new_conversation_id": message.new_conversation_id,
                                "uuid": message.uuid})
            else:
                cleared.append(summarize(message))
        obs["cleared"] = cleared
        await client.query("Reply with exactly: two")
        obs["after"] = [summarize(m) async for m in client.receive_response()]


run(main)
