// A query() with `agents`: the model delegates to the greeter; the child's messages carry
// parent_tool_use_id, and its start and end arrive as task system messages.
import { options, run, sdk, summarize } from "./_sdk.mjs";

run(async (obs) => {
  obs.messages = [];
  obs.attributed = [];
  obs.tasks = [];
  const agents = {
    greeter: {
      description: "Reads greeting files and reports their text.",
      prompt: "You are the greeter subagent. Read the file you are asked about and quote it.",
      tools: ["Read", "Grep"],
      model: "haiku",
    },
  };
  const q = sdk.query({ prompt: "What does greeting.txt say? Ask the greeter.", options: options({ agents }) });
  for await (const message of q) {
    if (message.type === "system" && message.subtype === "init") {
      obs.agents = message.agents ?? null;
      obs.tools = message.tools ?? null;
    }
    if (message.type === "system" && (message.subtype === "task_started" || message.subtype === "task_notification")) {
      obs.tasks.push({ subtype: message.subtype, task_id: message.task_id, tool_use_id: message.tool_use_id ?? null,
                       status: message.status ?? null, summary: message.summary ?? null });
    }
    if ((message.type === "assistant" || message.type === "user") && message.parent_tool_use_id) {
      obs.attributed.push({ type: message.type, parent_tool_use_id: message.parent_tool_use_id });
      continue;
    }
    if (message.type === "system" || message.type === "stream_event" || message.type === "rate_limit_event") continue;
    obs.messages.push(summarize(message));
    if (message.type === "result") break;
  }
});
