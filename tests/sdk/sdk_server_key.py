"""(j) An in-process SDK server registered under a key other than its name
(`mcp_servers={"calc": create_sdk_mcp_server(name="calculator", ...)}`): the SDK routes
`mcp_message`s by that key, so the CLI must address the server by it."""

from _sdk import options, run, summarize
from claude_agent_sdk import ClaudeSDKClient, create_sdk_mcp_server, tool

calls = []


@tool("add", "Add two integers", {"a": int, "b": int})
async def add(args):
    calls.append({"tool": "add", "args": args})
    return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}


async def main(obs):
    calculator = create_sdk_mcp_server(name="calculator", version="1.0.0", tools=[add])
    opts = options(mcp_servers={"calc": calculator}, allowed_tools=["mcp__calc__add"])
    async with ClaudeSDKClient(options=opts) as client:
        await client.query("Add 2 and 3.")
        obs["messages"] = [summarize(m) async for m in client.receive_response()]
        status = await client.get_mcp_status()
        obs["servers"] = [
            {"name": s["name"], "status": s["status"], "serverInfo": s.get("serverInfo")}
            for s in status["mcpServers"]
        ]
    obs["calls"] = calls


run(main)
