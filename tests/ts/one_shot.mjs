// A one-shot query() of a Read round trip: the prompt is a string.
import { options, run, sdk, turn } from "./_sdk.mjs";

run(async (obs) => {
  const q = sdk.query({ prompt: "Read greeting.txt and tell me what it says", options: options() });
  obs.messages = await turn(q);
  // The one-shot query ends after its result.
  obs.after_result = (await turn(q)).length;
});
