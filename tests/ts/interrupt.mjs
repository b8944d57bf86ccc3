// interrupt() while a reply is still streaming, then another prompt that works. The error
// result of the interrupted turn reaches the program (the SDK maps over its `errors`).
import { options, promptQueue, run, sdk, summarize, turn } from "./_sdk.mjs";

// The mock holds the rest of the slow reply far longer than this.
const FIRST_OUTPUT_WAIT_MS = 3000;

run(async (obs) => {
  const input = promptQueue();
  input.push("Tell me a very long story");
  const q = sdk.query({ prompt: input.messages, options: options({ includePartialMessages: true }) });
  // Interrupt once the reply has visibly started (its first streamed text), or after a fixed
  // wait with the reply still stalled.
  const seen = [];
  let started;
  const streaming = new Promise((resolve) => (started = resolve));
  const reading = (async () => {
    while (true) {
      const { value, done } = await q.next();
      if (done) return;
      if (value.type === "stream_event" && value.event.type === "content_block_delta") started();
      if (value.type === "stream_event" || (value.type === "system" && value.subtype !== "init")) continue;
      if (value.type === "rate_limit_event") continue;
      seen.push(value);
      if (value.type === "result") return;
    }
  })();
  await Promise.race([streaming, new Promise((resolve) => setTimeout(resolve, FIRST_OUTPUT_WAIT_MS))]);
  await q.interrupt();
  obs.interrupt_returned = true;
  await reading;
  obs.interrupted_turn = seen.map(summarize);
  input.push("Say hi");
  obs.second_turn = await turn(q);
  input.end();
});
