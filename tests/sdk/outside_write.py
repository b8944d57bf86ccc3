"""(k) A Write outside the working directory is put to can_use_tool (not refused outright):
the first prompt's call is allowed and the file is written, the second's is denied and the
model reads the denial as an error result."""

import os

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow, PermissionResultDeny


async def main(obs):
    obs["asked"] = []

    async def can_use_tool(tool_name, tool_input, context):
        obs["asked"].append({"tool_name": tool_name, "input": tool_input})
        if tool_input.get("file_path", "").endswith("allowed.txt"):
            return PermissionResultAllow()
        return PermissionResultDeny(message="Not that file.")

    outside = os.environ["AGENTLOOP_SDK_OUTSIDE"]
    async with ClaudeSDKClient(options=options(can_use_tool=can_use_tool, disallowed_tools=["Bash"])) as client:
        await client.query(f"Write hello to {outside}/allowed.txt")
        obs["allowed"] = [summarize(m) async for m in client.receive_response()]
        await client.query(f"Write hello to {outside}/denied.txt")
        obs["denied"] = [summarize(m) async for m in client.receive_response()]


run(main)
