"""(i) An in-process SDK MCP server (`create_sdk_mcp_server`): the model's calls of its
tools run in this Python process, one that raises gives an error result, and
get_mcp_status() reports the server connected with its tools."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, create_sdk_mcp_server, tool

calls = []


@tool("add", "Add two integers", {"a": int, "b": int})
async def add(args):
    calls.append({"tool": "add", "args": args})
    return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}


@tool("divide", "Divide a by b", {"a": int, "b": int})
async def divide(args):
    calls.append({"tool": "divide", "args": args})
    return {"content": [{"type": "text", "text": str(args["a"] // args["b"])}]}


async def main(obs):
    calc = create_sdk_mcp_server("calc", version="2.0.1", tools=[add, divide])
    opts = options(mcp_servers={"calc": calc}, allowed_tools=["mcp__calc"])
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("Add 2 and 40, then divide 1 by 0.")
        obs["messages"] = [summarize(m) async for m in client.receive_response()]
        status = await client.get_mcp_status()
        obs["servers"] = [
            {
                "name": s["name"],
                "status": s["status"],
                "serverInfo": s.get("serverInfo"),
                "tools": sorted(t["name"] for t in s.get("tools", [])),
            }
            for s in status["mcpServers"]
        ]
    obs["calls"] = calls


run(main)
