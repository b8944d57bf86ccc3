"""(f) query(resume=<session id>) continues an earlier session."""

from _sdk import options, run, summarize
from claude_agent_sdk import ResultMessage, query


async def main(obs):
    obs["first"] = [summarize(m) async for m in query(
        prompt="My name is Ada. Please remember it.", options=options())]
    session_id = next(m["session_id"] for m in obs["first"] if m["type"] == "result")
    obs["second"] = [summarize(m) async for m in query(
        prompt="What is my name?", options=options(resume=session_id))]


run(main)
