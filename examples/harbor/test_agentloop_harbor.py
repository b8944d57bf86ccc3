"""Tests of the Harbor adapter's command line and output reading (no Harbor needed):
`python3 -m unittest discover -s examples/harbor`."""

import shlex
import unittest

import agentloop_harbor as adapter


class ModelFlag(unittest.TestCase):
    def test_harbor_provider_names_map_to_agentloop_models(self):
        self.assertEqual(adapter.model_flag("anthropic/claude-sonnet-4-5"), "claude-sonnet-4-5")
        self.assertEqual(adapter.model_flag("openai/gpt-5"), "chat:gpt-5")
        self.assertEqual(adapter.model_flag("responses:gpt-5"), "responses:gpt-5")
        self.assertEqual(adapter.model_flag("claude-opus-5-5"), "claude-opus-5-5")
        self.assertEqual(adapter.model_flag("ollama/qwen3"), "ollama/qwen3")
        self.assertIsNone(adapter.model_flag(None))


class RunCommand(unittest.TestCase):
    def test_the_command_quotes_the_instruction_and_names_every_flag(self):
        instruction = "Fix the bug in 'main.c'; don't run $(rm -rf /)\nthen test"
        options = adapter.RunOptions(
            binary="/opt/agentloop",
            model="anthropic/claude-sonnet-4-5",
            max_turns=40,
            max_budget_usd=2.5,
            session_id="0f8fad5b-d9cb-469f-a165-70867728950e",
            log_dir="/logs/agent",
        )
        command = adapter.run_command(instruction, options)
        prefix = "mkdir -p /logs/agent && "
        self.assertTrue(command.startswith(prefix), command)
        body, redirect = command[len(prefix):].split(" < /dev/null > ")
        self.assertEqual(redirect, "/logs/agent/agentloop.jsonl")
        self.assertEqual(
            shlex.split(body),
            [
                "/opt/agentloop", "-p", instruction,
                "--output-format", "stream-json",
                "--permission-mode", "bypassPermissions",
                "--trace=jsonl", "--trace-file", "/logs/agent/trace.jsonl",
                "--model", "claude-sonnet-4-5",
                "--max-turns", "40",
                "--max-budget-usd", "2.5",
                "--session-id", "0f8fad5b-d9cb-469f-a165-70867728950e",
            ],
        )

    def test_unset_options_add_no_flags(self):
        argv = shlex.split(adapter.run_command("hi").split(" < ")[0].split(" && ", 1)[1])
        self.assertEqual(argv[0], adapter.INSTALLED_BINARY)
        for flag in ("--model", "--max-turns", "--max-budget-usd", "--session-id"):
            self.assertNotIn(flag, argv)

    def test_credentials_never_reach_the_command_line(self):
        self.assertIn("ANTHROPIC_API_KEY", adapter.PASSED_VARIABLES)
        self.assertNotIn("KEY", adapter.run_command("task", adapter.RunOptions(model="anthropic/m")))


class Summarize(unittest.TestCase):
    def test_the_last_result_line_gives_the_counts(self):
        lines = [
            '{"type":"system","subtype":"init"}',
            '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0.5,'
            '"usage":{"input_tokens":1,"output_tokens":2}}',
            '{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"total_cost_usd":0.25,'
            '"usage":{"input_tokens":100,"cache_read_input_tokens":20,"cache_creation_input_tokens":5,"output_tokens":7}}',
            '{"type":"resu',
        ]
        self.assertEqual(
            adapter.summarize(lines),
            adapter.Summary(
                subtype="error_max_turns", is_error=True, num_turns=3, input_tokens=125, cache_tokens=20,
                output_tokens=7, cost_usd=0.25,
            ),
        )

    def test_no_result_line_is_none(self):
        self.assertIsNone(adapter.summarize(['{"type":"assistant"}', "not json"]))


if __name__ == "__main__":
    unittest.main()
