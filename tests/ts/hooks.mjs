// Hooks: a PreToolUse callback (matcher "Bash") denies a call with a reason, and a
// PostToolUse callback (every tool) sees a Read's input and response.
import { options, run, sdk, turn } from "./_sdk.mjs";

run(async (obs) => {
  obs.hooks = [];
  const pre = async (input, toolUseId) => {
    obs.hooks.push({ event: input.hook_event_name, tool_name: input.tool_name, tool_input: input.tool_input,
                     tool_use_id: toolUseId, session_id: input.session_id, cwd: input.cwd });
    return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny",
                                   permissionDecisionReason: "No shell commands in this test" } };
  };
  const post = async (input, toolUseId) => {
    const response = input.tool_response;
    obs.hooks.push({ event: input.hook_event_name, tool_name: input.tool_name, tool_input: input.tool_input,
                     tool_use_id: toolUseId, response_mentions_greeting: JSON.stringify(response).includes("Hello from") });
    return {};
  };
  const hooks = { PreToolUse: [{ matcher: "Bash", hooks: [pre] }], PostToolUse: [{ hooks: [post] }] };
  const q = sdk.query({ prompt: "Read greeting.txt, then run a command", options: options({ hooks }) });
  obs.messages = await turn(q);
});
