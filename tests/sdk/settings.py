"""(k) setting_sources and a custom slash command, as test_agents_and_settings.py in the SDK's
own e2e suite uses them: what system/init reports with the sources left to the CLI, with the
user's only and with all three, a project command run by its /name, and a project output
style in the request (with the claude_code system prompt preset, where styles apply)."""

from _sdk import options, run, summarize
from claude_agent_sdk import SystemMessage, query


async def one(obs, name, prompt, **kwargs):
    """Run `prompt` with `kwargs`; keep init's output_style and slash_commands."""
    seen = {"messages": []}
    async for message in query(prompt=prompt, options=options(max_turns=1, **kwargs)):
        seen["messages"].append(summarize(message))
        if isinstance(message, SystemMessage) and message.subtype == "init":
            seen["output_style"] = message.data.get("output_style")
            seen["slash_commands"] = message.data.get("slash_commands")
    obs[name] = seen


async def main(obs):
    await one(obs, "default", "What is 2 + 2?")
    await one(obs, "user_only", "What is 3 + 3?", setting_sources=["user"])
    await one(obs, "all", "/testcmd alpha beta", setting_sources=["user", "project", "local"])
    await one(
        obs,
        "style",
        "Ahoy?",
        setting_sources=["project"],
        system_prompt={"type": "preset", "preset": "claude_code"},
    )


run(main)
