"""TodoWrite, Skill, NotebookEdit and WebSearch in SDK mode: can_use_tool allows what it is
asked about; the project's skill is found (setting_sources=["project"])."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow


async def main(obs):
    obs["asked"] = []

    async def can_use_tool(tool_name, tool_input, context):
        obs["asked"].append(tool_name)
        return PermissionResultAllow()

    opts = options(permission_mode="default", can_use_tool=can_use_tool, setting_sources=["project"], max_turns=6)
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("Plan, load the release skill, fix the notebook and search.")
        obs["messages"] = [summarize(m) async for m in client.receive_response()]


run(main)
