// A stdio MCP server and a system prompt in query()'s options (the SDK sends both in
// `initialize`): the model's call of the server's echo reaches it, and the request carries
// the system prompt.
import { options, run, sdk, turn } from "./_sdk.mjs";

run(async (obs) => {
  const everything = { command: process.execPath, args: [process.env.AGENTLOOP_TS_EVERYTHING] };
  const q = sdk.query({
    prompt: "Echo something",
    options: options({
      mcpServers: { everything },
      allowedTools: ["mcp__everything__echo"],
      systemPrompt: "You are a terse test assistant.",
    }),
  });
  obs.messages = await turn(q);
});
