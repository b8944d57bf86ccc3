"""Unit tests of the mock model's decisions: ``python3 -m unittest tests/sdk/upstream/test_policy.py``.

Each test builds a request body the way a CLI would and checks the exact reply ``policy.decide``
gives, so a change to a rule shows up here before it shows up as a different e2e outcome.
"""

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import policy  # noqa: E402

BASH = {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"},
                                                                         "description": {"type": "string"}}}}
TOOL_SEARCH = {"name": "ToolSearch", "input_schema": {"type": "object", "properties": {"query": {"type": "string"},
                                                                                      "max_results": {"type": "number"}}}}


def body(*messages, tools=(), model="claude-sonnet-4-5", **extra):
    """A streamed request with these messages and tools."""
    return {"model": model, "stream": True, "messages": list(messages), "tools": list(tools), **extra}


def user(text):
    return {"role": "user", "content": text}


def described(reply):
    return reply.describe()


class PolicyTest(unittest.TestCase):
    def test_reply_with_exactly(self):
        self.assertEqual(
            described(policy.decide(body(user("Reply with exactly: one")))),
            {"rule": "reply-with", "stop_reason": "end_turn", "blocks": [{"type": "Text", "text": "one"}]},
        )

    def test_system_reminders_are_not_the_prompt(self):
        message = {"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nnoise\n</system-reminder>\n"},
            {"type": "text", "text": "What is 2+2? Just respond with the number."},
        ]}
        self.assertEqual(described(policy.decide(body(message)))["blocks"], [{"type": "Text", "text": "4"}])

    def test_bash_call_then_summary(self):
        first = policy.decide(body(user("Run: echo 'hi'"), tools=[BASH]))
        self.assertEqual(described(first)["blocks"], [
            {"type": "ToolUse", "name": "Bash", "input": {"command": "echo 'hi'", "description": "Run echo"}},
        ])
        after = policy.decide(body(
            user("Run: echo 'hi'"),
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                               "input": {"command": "echo 'hi'"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hi"}]},
            tools=[BASH],
        ))
        self.assertEqual(described(after), {"rule": "bash/after", "stop_reason": "end_turn",
                                            "blocks": [{"type": "Text", "text": "The command ran. Output: hi"}]})

    def test_deferred_mcp_tool_is_loaded_first(self):
        announce = {"role": "system", "content": [{"type": "text", "text":
                    "The following deferred tools are now available via ToolSearch. Use it:\nmcp__test__echo\n\nmore"}]}
        reply = policy.decide(body(user("Call the mcp__test__echo tool with any text"), announce, tools=[TOOL_SEARCH]))
        self.assertEqual(described(reply)["blocks"], [
            {"type": "ToolUse", "name": "ToolSearch", "input": {"query": "select:mcp__test__echo", "max_results": 1}},
        ])
        definition = json.dumps({"name": "mcp__test__echo", "parameters": {
            "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}})
        loaded = policy.decide(body(
            user("Call the mcp__test__echo tool with any text"), announce,
            {"role": "assistant", "content": [{"type": "tool_use", "id": "s1", "name": "ToolSearch",
                                               "input": {"query": "select:mcp__test__echo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s1",
                                          "content": f"<functions><function>{definition}</function></functions>"}]},
            tools=[TOOL_SEARCH],
        ))
        self.assertEqual(described(loaded)["blocks"], [
            {"type": "ToolUse", "name": "mcp__test__echo", "input": {"text": "hello"}},
        ])

    def test_mcp_arguments_from_the_prompt_one_at_a_time(self):
        greet = {"name": "mcp__test__greet", "input_schema": {"type": "object", "properties": {"name": {"type": "string"}},
                                                              "required": ["name"]}}
        prompt = ("First use the greet tool to greet 'Alice'. After that completes, use the echo tool to echo "
                  "'test'. Do these one at a time, not in parallel.")
        self.assertEqual(described(policy.decide(body(user(prompt), tools=[greet])))["blocks"], [
            {"type": "ToolUse", "name": "mcp__test__greet", "input": {"name": "Alice"}},
        ])

    def test_structured_output_without_tools_needed(self):
        schema = {"type": "object", "properties": {
            "analysis": {"type": "object", "properties": {"word_count": {"type": "number"},
                                                          "character_count": {"type": "number"}}},
            "words": {"type": "array", "items": {"type": "string"}}}}
        prompt = "Analyze this text: 'Hello world'. Provide word count, character count, and list of words."
        reply = policy.decide(body(user(prompt), tools=[{"name": "StructuredOutput", "input_schema": schema}]))
        self.assertEqual(described(reply)["blocks"], [
            {"type": "ToolUse", "name": "StructuredOutput",
             "input": {"analysis": {"word_count": 2, "character_count": 11}, "words": ["Hello", "world"]}},
        ])

    def test_thinking_only_when_enabled(self):
        prompt = user("Think step by step about what 2 + 2 equals")
        self.assertEqual([b["type"] for b in described(policy.decide(body(prompt)))["blocks"]], ["Text"])
        enabled = body(prompt, thinking={"type": "enabled", "budget_tokens": 8000})
        self.assertEqual(described(policy.decide(enabled))["blocks"], [
            {"type": "Thinking", "thinking": "Step 1: start with 2. Step 2: add 2 to it. Step 3: 2 + 2 = 4.",
             "signature": policy.Thinking("").signature},
            {"type": "Text", "text": "2 + 2 = 4"},
        ])

    def test_unknown_model_is_a_404(self):
        reply = policy.decide(body(user("Reply with: pong"), model="claude-nonexistent-model-for-sdk-e2e"))
        self.assertEqual(described(reply), {"rule": "unknown-model", "status": 404, "kind": "not_found_error",
                                            "message": "model: claude-nonexistent-model-for-sdk-e2e"})

    def test_session_title_answers_in_json_when_asked_for_a_format(self):
        request = body(user("<session>\nReply with exactly: one\n</session>\n\nWrite the title..."),
                       system=[{"type": "text", "text": "You are naming a coding session. The title is short."}],
                       output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}})
        self.assertEqual(described(policy.decide(request))["blocks"], [
            {"type": "Text", "text": '{"title": "Reply with exactly: one"}'},
        ])


if __name__ == "__main__":
    unittest.main()
