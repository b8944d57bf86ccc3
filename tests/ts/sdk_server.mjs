// An in-process MCP server (createSdkMcpServer + tool) registered under a key other than its
// name: the model's calls of mcp__calc__* run here, a tool that throws gives an error result,
// and mcpServerStatus() reports the server connected.
import { options, promptQueue, run, sdk, turn, z } from "./_sdk.mjs";

run(async (obs) => {
  obs.calls = [];
  const add = sdk.tool("add", "Add two integers", { a: z.number(), b: z.number() }, async (args) => {
    obs.calls.push({ tool: "add", args });
    return { content: [{ type: "text", text: String(args.a + args.b) }] };
  });
  const divide = sdk.tool("divide", "Divide a by b", { a: z.number(), b: z.number() }, async (args) => {
    obs.calls.push({ tool: "divide", args });
    if (args.b === 0) throw new Error("division by zero");
    return { content: [{ type: "text", text: String(args.a / args.b) }] };
  });
  const calculator = sdk.createSdkMcpServer({ name: "calculator", version: "2.0.1", tools: [add, divide] });
  const input = promptQueue();
  input.push("Add 2 and 40, then divide 1 by 0.");
  const q = sdk.query({
    prompt: input.messages,
    options: options({ mcpServers: { calc: calculator }, allowedTools: ["mcp__calc__add", "mcp__calc__divide"] }),
  });
  obs.messages = await turn(q);
  const status = await q.mcpServerStatus();
  obs.servers = status.map((s) => ({ name: s.name, status: s.status, tools: (s.tools ?? []).map((t) => t.name).sort() }));
  input.end();
});
