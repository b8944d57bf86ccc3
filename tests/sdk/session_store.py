"""(k) A SessionStore: the CLI mirrors its transcript into the store (`--session-mirror`), so
a resume works with the session's file gone from the config directory: the SDK writes the
stored lines back for the resumed CLI."""

import os
import shutil

from _sdk import options, run, summarize
from claude_agent_sdk import InMemorySessionStore, query


async def main(obs):
    store = InMemorySessionStore()
    obs["first"] = [summarize(m) async for m in query(
        prompt="My name is Ada. Please remember it.", options=options(session_store=store))]
    session_id = next(m["session_id"] for m in obs["first"] if m["type"] == "result")
    shutil.rmtree(os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "projects"), ignore_errors=True)
    obs["second"] = [summarize(m) async for m in query(
        prompt="What is my name?", options=options(session_store=store, resume=session_id))]


run(main)
