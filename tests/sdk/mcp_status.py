"""(h) An MCP server given in the SDK's options: its tool answers a call, and
get_mcp_status() reports the server connected with its tools."""

import os

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVERYTHING = os.path.join(
    REPO, ".ci/cache/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)


async def main(obs):
    servers = {"everything": {"type": "stdio", "command": "node", "args": [EVERYTHING, "stdio"]}}
    opts = options(mcp_servers=servers, allowed_tools=["mcp__everything"])
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("Echo something with the everything server.")
        obs["messages"] = [summarize(m) async for m in client.receive_response()]
        status = await client.get_mcp_status()
        obs["servers"] = [
            {
                "name": s["name"],
                "status": s["status"],
                "tools": sorted(t["name"] for t in s.get("tools", [])),
            }
            for s in status["mcpServers"]
        ]


run(main)
