"""WebFetch in SDK mode: can_use_tool is asked, with the domain rule as its suggestion, and
allows the call; the page is fetched and the small model's answer is the result."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow


async def main(obs):
    obs["asked"] = []

    async def can_use_tool(tool_name, tool_input, context):
        obs["asked"].append({"tool_name": tool_name, "input": tool_input,
                             "suggestions": [{"tool_name": r.tool_name, "rule_content": r.rule_content}
                                             for s in (context.suggestions or []) for r in (s.rules or [])]})
        return PermissionResultAllow()

    opts = options(permission_mode="default", can_use_tool=can_use_tool)
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("How is statig installed?")
        obs["messages"] = [summarize(m) async for m in client.receive_response()]


run(main)
