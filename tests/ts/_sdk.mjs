// Shared by the programs tests/it/ts_sdk.rs runs with the real TypeScript Claude Agent SDK
// (@anthropic-ai/claude-agent-sdk, installed by .ci/install-ts-clients).
//
// Each program drives the CLI named by AGENTLOOP_SDK_CLI (`pathToClaudeCodeExecutable`) in the
// working directory AGENTLOOP_SDK_CWD through the SDK's own code, and prints one JSON line of
// observations on stdout at the end; the CLI's stderr goes to ours, prefixed "cli: ".

import { pathToFileURL } from "node:url";
import { join } from "node:path";

const modules = process.env.AGENTLOOP_TS_MODULES;
const load = (path) => import(pathToFileURL(join(modules, path)).href);

/** The SDK's module. */
export const sdk = await load("@anthropic-ai/claude-agent-sdk/sdk.mjs");
/** zod, the SDK's schema library (its peer dependency), for `tool()`'s input schemas. */
export const { z } = await load("zod/index.js");

/** A program that takes longer than this has hung: fail with what was seen so far. */
const TIMEOUT_MS = Number(process.env.AGENTLOOP_SDK_TIMEOUT ?? "90") * 1000;

/** Options for the CLI under test, in the scenario's working directory. */
export function options(extra = {}) {
  return {
    pathToClaudeCodeExecutable: process.env.AGENTLOOP_SDK_CLI,
    cwd: process.env.AGENTLOOP_SDK_CWD,
    maxTurns: 5,
    stderr: (data) => process.stderr.write(`cli: ${data}`),
    ...extra,
  };
}

/** A streaming-input prompt: `push(text)` sends a user message, `end()` closes the input. */
export function promptQueue() {
  const queue = [];
  let wake = null;
  let ended = false;
  async function* messages() {
    while (true) {
      while (queue.length > 0) yield queue.shift();
      if (ended) return;
      await new Promise((resolve) => (wake = resolve));
    }
  }
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  return {
    messages: messages(),
    push(text) {
      queue.push({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" });
      notify();
    },
    end() {
      ended = true;
      notify();
    },
  };
}

/** What a test asserts on, from one message the SDK produced. */
export function summarize(message) {
  switch (message.type) {
    case "assistant": {
      const content = message.message.content;
      return {
        type: "assistant",
        texts: content.filter((b) => b.type === "text").map((b) => b.text),
        tool_uses: content.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, input: b.input })),
        model: message.message.model,
        session_id: message.session_id,
      };
    }
    case "user": {
      const content = message.message.content;
      const blocks = Array.isArray(content) ? content : [];
      return {
        type: "user",
        text: typeof content === "string" ? content : null,
        tool_results: blocks
          .filter((b) => b.type === "tool_result")
          .map((b) => ({ tool_use_id: b.tool_use_id, is_error: b.is_error ?? false, content: b.content })),
        is_replay: message.isReplay ?? false,
      };
    }
    case "result":
      return {
        type: "result",
        subtype: message.subtype,
        is_error: message.is_error,
        num_turns: message.num_turns,
        session_id: message.session_id,
        result: message.result ?? null,
        errors: message.errors ?? null,
      };
    case "system":
      return { type: "system", subtype: message.subtype, session_id: message.session_id ?? null,
               model: message.model ?? null, permission_mode: message.permissionMode ?? null };
    default:
      return { type: message.type };
  }
}

/** The messages of one turn: up to and including its result. */
export async function turn(iterator) {
  const seen = [];
  while (true) {
    const { value, done } = await iterator.next();
    if (done) return seen;
    // Lines of a CLI's own (agentloop's tool lines, Claude Code's state changes) are not
    // the conversation.
    if (value.type === "system" && value.subtype !== "init") continue;
    if (value.type === "stream_event" || value.type === "rate_limit_event") continue;
    seen.push(summarize(value));
    if (value.type === "result") return seen;
  }
}

function emit(observations) {
  process.stdout.write(`${JSON.stringify(observations)}\n`);
}

/** Run `main(observations)` under the timeout; print the observations either way. */
export function run(main) {
  const observations = {};
  const timer = setTimeout(() => {
    observations.error = `timed out after ${TIMEOUT_MS} ms`;
    emit(observations);
    process.exit(1);
  }, TIMEOUT_MS);
  main(observations).then(
    () => {
      clearTimeout(timer);
      emit(observations);
      process.exit(0);
    },
    (error) => {
      clearTimeout(timer);
      observations.error = `${error?.name}: ${error?.message}`;
      emit(observations);
      process.exit(1);
    },
  );
}
