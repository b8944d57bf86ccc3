"""(l) A truncating resume: a two-turn session forked at the end of turn one with
resume_session_at and resume_drops_turn = turn two's prompt; then the same with a wrong
drops-turn uuid, which the CLI refuses (a ProcessError with the reason)."""

import uuid

from _sdk import options, run
from claude_agent_sdk import (AssistantMessage, ClaudeSDKClient, ProcessError, ResultMessage,
                              get_session_messages, query)

CWD = options().cwd


def prompts(session_id):
    return [m.message["content"] for m in get_session_messages(session_id, directory=str(CWD))
            if m.type == "user" and isinstance(m.message.get("content"), str)]


async def main(obs):
    last_assistant = None
    results = []
    async with ClaudeSDKClient(options(max_turns=1)) as client:
        await client.query("Reply with exactly: one")
        async for message in client.receive_response():
            if isinstance(message, AssistantMessage):
                last_assistant = message
            elif isinstance(message, ResultMessage):
                results.append(message)
        await client.query("Reply with exactly: two")
        results += [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
    session_id = results[-1].session_id
    chain = get_session_messages(session_id, directory=str(CWD))
    obs["chain"] = [{"type": m.type, "uuid": m.uuid} for m in chain]
    obs["keep_at"] = last_assistant.uuid
    turn_two = next(m.uuid for m in chain if m.type == "user"
                    and m.message.get("content") == "Reply with exactly: two")
    obs["turn_two"] = turn_two

    forked = [m async for m in query(prompt="Reply with exactly: three", options=options(
        max_turns=1, resume=session_id, fork_session=True, resume_session_at=last_assistant.uuid,
        resume_drops_turn=turn_two)) if isinstance(m, ResultMessage)]
    obs["forked"] = {"session_id": forked[0].session_id, "is_error": forked[0].is_error}
    obs["forked_prompts"] = prompts(forked[0].session_id)
    obs["source_prompts"] = prompts(session_id)
    obs["source"] = session_id

    try:
        async for _ in query(prompt="Reply with exactly: four", options=options(
                max_turns=1, resume=session_id, fork_session=True,
                resume_session_at=last_assistant.uuid, resume_drops_turn=str(uuid.uuid4()))):
            pass
        obs["refused"] = None
    except ProcessError as e:
        obs["refused"] = str(e)
    obs["source_prompts_after"] = prompts(session_id)


run(main)
