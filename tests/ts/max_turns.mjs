// maxTurns: 1 with a reply that calls a tool: the turn ends error_max_turns, and the SDK
// hands the error result over (its `errors` mapped) instead of crashing.
import { options, run, sdk, turn } from "./_sdk.mjs";

run(async (obs) => {
  const q = sdk.query({ prompt: "Read greeting.txt and tell me what it says", options: options({ maxTurns: 1 }) });
  try {
    obs.messages = await turn(q);
  } catch (error) {
    obs.thrown = `${error?.name}: ${error?.message}`;
  }
});
