// canUseTool: the callback allows a Bash call and denies a Write; what it was asked.
import { options, run, sdk, turn } from "./_sdk.mjs";

run(async (obs) => {
  obs.asked = [];
  const canUseTool = async (toolName, input, context) => {
    obs.asked.push({ tool_name: toolName, input, tool_use_id: context.toolUseID });
    return toolName === "Bash"
      ? { behavior: "allow", updatedInput: input }
      : { behavior: "deny", message: "Not in this test: writing files is off limits" };
  };
  const q = sdk.query({ prompt: "Run a command, then write a file", options: options({ canUseTool }) });
  obs.messages = await turn(q);
});
