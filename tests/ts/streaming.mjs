// Streaming input: two prompts on one query(), the second sent after the first's result.
import { options, promptQueue, run, sdk, turn } from "./_sdk.mjs";

run(async (obs) => {
  const input = promptQueue();
  input.push("My name is Ada. Please remember it.");
  const q = sdk.query({ prompt: input.messages, options: options() });
  obs.first = await turn(q);
  input.push("What is my name?");
  obs.second = await turn(q);
  input.end();
  obs.after_end = (await turn(q)).length;
});
