"""(d) can_use_tool denies a Bash call; the model reads the message."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, PermissionResultDeny

DENIAL = "Not in this test: writing files is off limits"


async def main(obs):
    obs["asked"] = []

    async def can_use_tool(tool_name, tool_input, context):
        obs["asked"].append({"tool_name": tool_name, "input": tool_input})
        return PermissionResultDeny(message=DENIAL)

    opts = options(permission_mode="default", can_use_tool=can_use_tool)
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("Make a file with bash")
        obs["messages"] = [summarize(m) async for m in client.receive_response()]


run(main)
