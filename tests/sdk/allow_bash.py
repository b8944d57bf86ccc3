"""(c) can_use_tool allows a Bash call; a PreToolUse hook callback sees it first."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, HookMatcher, PermissionResultAllow


async def main(obs):
    obs["events"] = []

    async def can_use_tool(tool_name, tool_input, context):
        obs["events"].append({"callback": "can_use_tool", "tool_name": tool_name,
                              "input": tool_input, "tool_use_id": context.tool_use_id})
        return PermissionResultAllow()

    async def pre_tool_use(hook_input, tool_use_id, context):
        obs["events"].append({"callback": "hook", "hook_event_name": hook_input.get("hook_event_name"),
                              "tool_name": hook_input.get("tool_name"),
                              "tool_input": hook_input.get("tool_input"),
                              "tool_use_id": tool_use_id,
                              "input_tool_use_id": hook_input.get("tool_use_id"),
                              "session_id": hook_input.get("session_id")})
        return {}

    opts = options(
        permission_mode="default",
        can_use_tool=can_use_tool,
        hooks={"PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre_tool_use])]},
    )
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("Make a file with bash")
        obs["messages"] = [summarize(m) async for m in client.receive_response()]


run(main)
