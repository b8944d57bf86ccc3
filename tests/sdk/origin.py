"""(j) A user message's `origin` is echoed on its result: `{"kind": "human"}` when the host
stamped it (with the message's uuid as `user_message_uuid`), nothing when it did not."""

from _sdk import options, run
from claude_agent_sdk import ClaudeSDKClient, ResultMessage

STAMPED_UUID = "5b1d8f0e-7a2c-4d3e-9f10-2a3b4c5d6e7f"


def user_message(text, **extra):
    return {"type": "user", "message": {"role": "user", "content": text},
            "parent_tool_use_id": None, **extra}


async def one(message):
    yield message


async def main(obs):
    results = []
    async with ClaudeSDKClient(options=options(max_turns=1)) as client:
        await client.query(one(user_message("Reply with exactly: one", origin={"kind": "human"},
                                            uuid=STAMPED_UUID)))
        results += [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
        await client.query(one(user_message("Reply with exactly: two")))
        results += [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
    obs["results"] = [{"origin": r.origin, "is_error": r.is_error, "user_message_uuid": r.user_message_uuid,
                       "session_id": r.session_id} for r in results]
    obs["stamped_uuid"] = STAMPED_UUID


run(main)
