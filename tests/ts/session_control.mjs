// Session control: setPermissionMode and setModel on a running streaming query apply to the
// next prompt; then a new query() resumes the session by id.
import { options, promptQueue, run, sdk, turn } from "./_sdk.mjs";

run(async (obs) => {
  const input = promptQueue();
  input.push("My name is Ada. Please remember it.");
  const q = sdk.query({ prompt: input.messages, options: options({ model: "claude-sonnet-4-5" }) });
  obs.first = await turn(q);
  await q.setPermissionMode("acceptEdits");
  await q.setModel("claude-haiku-4-5");
  input.push("Say ok");
  obs.second = await turn(q);
  input.end();
  const sessionId = obs.first.at(-1).session_id;
  const resumed = sdk.query({ prompt: "What is my name?", options: options({ resume: sessionId }) });
  obs.resumed = await turn(resumed);
});
