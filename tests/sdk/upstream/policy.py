"""What the mock model answers: a function of the request body only.

``decide(body)`` reads the prompt that began the current turn (the last user message with
text of its own, ``<system-reminder>`` sections removed), the tools the request offers, the
tool calls made since that prompt with their results, the model and the thinking and output
format settings, and returns what a capable model would: the tool call the prompt asks for
(fitted to the offered tool's input schema), then, once the results are in, a short text.
Nothing else (which CLI is asking, earlier requests, time) enters the decision, so both CLIs
get the same answer to the same request.

The rules are written for the prompts of claude-agent-sdk-python's ``e2e-tests/``; a prompt
no rule knows gets a short generic text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable


# ----------------------------------------------------------------------------- reply shapes


@dataclass
class Text:
    """A text block."""

    text: str


@dataclass
class Thinking:
    """A thinking block (only when the request enables thinking)."""

    thinking: str
    signature: str = "bW9jay10aGlua2luZy1zaWduYXR1cmU="


@dataclass
class ToolUse:
    """A tool_use block; the server gives it an id."""

    name: str
    input: dict[str, Any]


Block = Text | Thinking | ToolUse


@dataclass
class Reply:
    """An assistant message: its blocks, the pause between streamed deltas, the rule that chose it."""

    blocks: list[Block]
    rule: str
    pace: float = 0.0

    def stop_reason(self) -> str:
        """``tool_use`` when the message calls a tool, else ``end_turn``."""
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"

    def describe(self) -> dict[str, Any]:
        """The reply as one JSON-able record, for the request log."""
        return {
            "rule": self.rule,
            "stop_reason": self.stop_reason(),
            "blocks": [{"type": type(b).__name__, **b.__dict__} for b in self.blocks],
        }


@dataclass
class ApiError:
    """An error response, as the API sends it (``{"type": "error", "error": {...}}``)."""

    status: int
    kind: str
    message: str
    rule: str

    def describe(self) -> dict[str, Any]:
        """The error as one JSON-able record, for the request log."""
        return {"rule": self.rule, "status": self.status, "kind": self.kind, "message": self.message}


def pieces(text: str, size: int = 16) -> list[str]:
    """``text`` cut into the deltas it is streamed as (at least one, possibly empty)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# ----------------------------------------------------------------------------- the request


@dataclass
class Call:
    """A tool call made since the prompt, with its result once the request carries it."""

    name: str
    input: dict[str, Any]
    result: str | None = None
    is_error: bool = False


@dataclass
class Request:
    """What the rules read from a request body."""

    model: str
    prompt: str
    system: str
    tools: dict[str, dict[str, Any]]
    deferred: set[str]
    steps: list[list[Call]]
    thinking: str | None  # "enabled" / "adaptive" when the request turns thinking on
    output_schema: dict[str, Any] | None

    @property
    def calls(self) -> list[Call]:
        """Every call since the prompt, in order."""
        return [c for step in self.steps for c in step]

    def called(self, name: str) -> list[Call]:
        """The calls of tool ``name`` since the prompt."""
        return [c for c in self.calls if c.name == name]


_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return []


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_texts(content))
    return ""


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""

_DEFERRED_INTRO = re.compile(r"deferred tools are now available via ToolSearch[^\n]*\n((?:[^\n]+\n?)+)")
_FUNCTION = re.compile(r"<function>(.*?)</function>", re.S)


def _loaded_tools(content: Any) -> dict[str, dict[str, Any] | None]:
    """Tools a tool search result made callable: ``<function>{json}</function>`` definitions
    (name → schema) and ``tool_reference`` blocks (name → None: the request's own entry)."""
    found: dict[str, dict[str, Any] | None] = {}
    for m in _FUNCTION.finditer(_result_text(content)):
        try:
            definition = json.loads(m.group(1))
        except json.JSONDecodeError:
            continue
        if isinstance(definition, dict) and definition.get("name"):
            found[definition["name"]] = definition.get("parameters") or definition.get("input_schema") or {}
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_reference" and b.get("tool_name"):
            found.setdefault(b["tool_name"], None)
    return found


def _tools(body: dict[str, Any], loaded: dict[str, dict[str, Any] | None]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """The callable tools (name → input schema) and the names of deferred ones not yet loaded.

    A tool is callable when the request defines it without ``defer_loading``, or a tool search
    result loaded it. A tool is deferred when the request defines it with ``defer_loading``,
    or a message announces it as available through ToolSearch.
    """
    tools: dict[str, dict[str, Any]] = {}
    deferred: set[str] = set()
    defined: dict[str, dict[str, Any]] = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict) or not t.get("name"):
            continue
        defined[t["name"]] = t.get("input_schema") or {}
        if t.get("defer_loading"):
            deferred.add(t["name"])
        else:
            tools[t["name"]] = defined[t["name"]]
    texts = [_system_text(body.get("system"))]
    for message in body.get("messages", []):
        texts.extend(_texts(message.get("content")))
    for text in texts:
        for m in _DEFERRED_INTRO.finditer(text):
            deferred.update(line.strip() for line in m.group(1).splitlines() if re.fullmatch(r"[\w.-]+", line.strip()))
    for name, schema in loaded.items():
        tools[name] = schema if schema is not None else defined.get(name, {})
    return tools, deferred - set(tools)


def parse(body: dict[str, Any]) -> Request:
    """The rules' view of ``body``."""
    prompt = ""
    loaded: dict[str, dict[str, Any] | None] = {}
    steps: list[list[Call]] = []
    by_id: dict[str, Call] = {}
    for message in body.get("messages", []):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message.get("role") == "assistant":
            step = []
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    call = Call(b.get("name", ""), b.get("input") or {})
                    by_id[b.get("id", "")] = call
                    step.append(call)
            if step:
                steps.append(step)
            continue
        if message.get("role") != "user":
            continue
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for r in results:
            call = by_id.get(r.get("tool_use_id", ""))
            if call is not None:
                call.result = _result_text(r.get("content"))
                call.is_error = bool(r.get("is_error"))
            loaded.update(_loaded_tools(r.get("content")))
        if results:
            continue
        own = [t for t in (_REMINDER.sub("", t).strip() for t in _texts(content)) if t]
        if own:
            prompt = own[-1]
            steps = []
            by_id = {}
    tools, deferred = _tools(body, loaded)
    thinking = body.get("thinking") or {}
    output = body.get("output_format") or (body.get("output_config") or {}).get("format") or {}
    return Request(
        model=str(body.get("model", "")),
        prompt=prompt,
        system=_system_text(body.get("system")),
        tools=tools,
        deferred=deferred,
        steps=steps,
        thinking=thinking.get("type") if thinking.get("type") in ("enabled", "adaptive") else None,
        output_schema=output.get("schema") if output.get("type") == "json_schema" else None,
    )


# ----------------------------------------------------------------------------- helpers


def fit(schema: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """``wanted`` restricted to the properties ``schema`` declares (all of it if it declares none)."""
    props = schema.get("properties")
    if not isinstance(props, dict) or not props:
        return dict(wanted)
    return {k: v for k, v in wanted.items() if k in props}


def first_property(schema: dict[str, Any], names: list[str], default: str) -> str:
    """The first of ``names`` that ``schema`` declares, else ``default``."""
    props = schema.get("properties") or {}
    return next((n for n in names if n in props), default)


def fill(schema: dict[str, Any], facts: dict[str, Any]) -> Any:
    """A value matching ``schema``, taking each property's value from ``facts`` where it has one."""
    kind = schema.get("type")
    if "enum" in schema:
        return facts if facts in schema["enum"] else schema["enum"][0]
    if kind == "object" or "properties" in schema:
        facts = facts if isinstance(facts, dict) else {}
        out = {}
        for name, sub in (schema.get("properties") or {}).items():
            out[name] = fill(sub, facts[name]) if name in facts else fill(sub, _NO_FACT)
        return out
    if facts is not _NO_FACT:
        return facts
    return {"string": "", "number": 0, "integer": 0, "boolean": False, "array": [], "null": None}.get(
        kind if isinstance(kind, str) else "string", ""
    )


_NO_FACT: Any = object()


def lines_of(text: str | None) -> list[str]:
    """The non-empty lines of a tool result."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def with_thinking(req: Request, blocks: list[Block], thought: str | None = None) -> list[Block]:
    """``blocks``, after a thinking block when the request enables thinking: always with a
    budget (``enabled``), and under ``adaptive`` thinking when the prompt asks to think."""
    if req.thinking is None or (req.thinking == "adaptive" and "think" not in req.prompt.lower()):
        return blocks
    return [Thinking(thought or f"The user wrote: {req.prompt!r}. I will answer directly."), *blocks]


def load_first(req: Request, names: list[str]) -> Reply | None:
    """A ToolSearch call selecting those of ``names`` that are deferred, if any are and the
    request offers ToolSearch (and it was not already asked for them)."""
    wanted = [n for n in names if n in req.deferred]
    if not wanted or "ToolSearch" not in req.tools:
        return None
    if any(c.name == "ToolSearch" and all(n in str(c.input.get("query", "")) for n in wanted) for c in req.calls):
        return None
    query = {"query": "select:" + ",".join(wanted), "max_results": len(wanted)}
    return Reply([ToolUse("ToolSearch", fit(req.tools["ToolSearch"], query))], "load-deferred-tools")


def available(req: Request, name: str) -> bool:
    """Whether ``name`` is callable now or can be loaded with ToolSearch."""
    return name in req.tools or (name in req.deferred and "ToolSearch" in req.tools)


# ----------------------------------------------------------------------------- rules

Rule = Callable[[Request, str], "Reply | ApiError | None"]
_RULES: list[tuple[str, Rule]] = []


def rule(name: str) -> Callable[[Rule], Rule]:
    """Register a rule; rules are tried in the order they are defined."""

    def register(f: Rule) -> Rule:
        _RULES.append((name, f))
        return f

    return register


_KNOWN_MODEL = re.compile(r"^claude-(?:[\w.]+-)*(?:opus|sonnet|haiku)(?:-[\w.]+)*(?:\[1m\])?$")


@rule("unknown-model")
def _unknown_model(req: Request, p: str) -> ApiError | None:
    """A model id the API does not know: 404 ``not_found_error``, as the real API answers."""
    if _KNOWN_MODEL.match(req.model) and "nonexistent" not in req.model:
        return None
    return ApiError(404, "not_found_error", f"model: {req.model}", "unknown-model")


@rule("session-title")
def _title(req: Request, p: str) -> Reply | None:
    """Claude Code's side request for a session title (no tools, a title-writing system prompt)."""
    if req.tools or "title" not in req.system.lower():
        return None
    session = re.search(r"<session>\s*(.*?)\s*</session>", req.prompt, re.S)
    words = (session.group(1) if session else req.prompt).split()
    title = " ".join(words[:5]) or "New session"
    if "json" in req.system.lower() or req.output_schema is not None:
        return Reply([Text(json.dumps({"title": title}))], "session-title")
    return Reply([Text(title)], "session-title")


@rule("structured-output")
def _structured(req: Request, p: str) -> Reply | None:
    """A prompt under ``--json-schema``: explore with the tool the prompt needs, then answer in
    the ``StructuredOutput`` tool (or, when the request asks for a JSON format instead, in text)."""
    tool_schema = req.tools.get("StructuredOutput")
    schema = tool_schema if tool_schema is not None else req.output_schema
    if schema is None:
        return None
    if req.called("StructuredOutput") and not req.called("StructuredOutput")[-1].is_error:
        return Reply([Text("Done.")], "structured-output/after")
    explore = _exploration(req, p)
    if explore is not None and not any(c.name == explore.name and c.input == explore.input for c in req.calls):
        return Reply(with_thinking(req, [explore]), "structured-output/explore")
    facts = _facts(req, p)
    value = fill(schema, facts)
    if tool_schema is not None:
        return Reply(with_thinking(req, [ToolUse("StructuredOutput", value)]), "structured-output/answer")
    return Reply(with_thinking(req, [Text(json.dumps(value))]), "structured-output/answer-text")


def _exploration(req: Request, p: str) -> ToolUse | None:
    """The one call that gathers what the prompt's answer needs: Glob/Grep when offered, else
    the same search with Bash."""
    m = re.search(r"python files are in (\S+?)/? ", p)
    if m:
        if "Glob" in req.tools:
            return ToolUse("Glob", fit(req.tools["Glob"], {"pattern": f"{m.group(1)}/**/*.py"}))
        return _bash_call(req, f"find {m.group(1)} -name '*.py'", "Find Python files")
    if "use grep" in p:
        if "Grep" in req.tools:
            schema = req.tools["Grep"]
            wanted: dict[str, Any] = {"pattern": r"import (pytest|unittest|nose)", "path": "tests"}
            modes = ((schema.get("properties") or {}).get("output_mode") or {}).get("enum") or []
            if "content" in modes:
                wanted["output_mode"] = "content"
            return ToolUse("Grep", fit(schema, wanted))
        return _bash_call(req, "grep -rE '^(import|from) (pytest|unittest|nose)' tests",
                          "Search tests for framework imports")
    if "files are in the current directory" in p:
        if "Glob" in req.tools:
            return ToolUse("Glob", fit(req.tools["Glob"], {"pattern": "*"}))
        return _bash_call(req, "ls -A", "List files in current directory")
    return None


def _bash_call(req: Request, command: str, description: str) -> ToolUse | None:
    if "Bash" not in req.tools:
        return None
    return ToolUse("Bash", fit(req.tools["Bash"], {"command": command, "description": description}))


def _facts(req: Request, p: str) -> dict[str, Any]:
    """What the exploration found, under the names the prompts' schemas use."""
    m = re.search(r"analyze this text: '([^']*)'", req.prompt, re.I)
    if m:
        words = m.group(1).split()
        return {"analysis": {"word_count": len(words), "character_count": len(m.group(1))}, "words": words}
    facts: dict[str, Any] = {}
    for call in req.calls:
        if call.is_error or call.result is None:
            continue
        command = str(call.input.get("command", ""))
        if call.name == "Glob" or command.startswith(("find ", "ls")):
            found = [line for line in lines_of(call.result)
                     if not line.lower().startswith(("no files", "found ", "(no output"))]
            tests = [f for f in found if "test" in f.rsplit("/", 1)[-1].lower()]
            facts.update(
                file_count=len(found),
                has_tests=bool(tests),
                test_file_count=len(tests),
                has_readme=any("readme" in f.rsplit("/", 1)[-1].lower() for f in found),
            )
        if call.name == "Grep" or command.startswith("grep "):
            text = call.result
            framework = next((f for f in ("pytest", "unittest", "nose") if f in text), "unknown")
            files = {line.split(":", 1)[0] for line in lines_of(text) if ":" in line}
            facts.update(has_tests=bool(files) or framework != "unknown", test_framework=framework,
                         test_count=len(files))
    return facts


@rule("subagent")
def _subagent(req: Request, p: str) -> Reply | None:
    """"Use the Agent tool ... subagent_type 'X', prompt 'Y' ... Then reply with ... WORD"."""
    m = re.search(r"use the (?:agent|task) tool", p)
    if not m:
        return None
    tool = next((t for t in ("Agent", "Task") if t in req.tools), None)
    final = re.search(r"reply with the single word (\w+)", req.prompt, re.I)
    done = final.group(1) if final else "Done."
    if tool is None:
        return Reply([Text("I have no Agent tool to call.")], "subagent/unavailable")
    if req.called(tool):
        return Reply([Text(done)], "subagent/after")
    kind = re.search(r"subagent_type '([^']+)'", req.prompt)
    task = re.search(r"prompt '([^']+)'", req.prompt)
    background = re.search(r"run_in_background set to (true|false)", p)
    wanted: dict[str, Any] = {
        "description": "Run the requested subagent",
        "prompt": task.group(1) if task else req.prompt,
        "subagent_type": kind.group(1) if kind else "general-purpose",
    }
    if background:
        wanted["run_in_background"] = background.group(1) == "true"
    return Reply([ToolUse(tool, fit(req.tools[tool], wanted))], "subagent/call")


@rule("write-file")
def _write(req: Request, p: str) -> Reply | None:
    """"Use the Write tool to create the file PATH containing exactly the text WORD"."""
    m = re.search(r"use the write tool to create the file (\S+) containing exactly the text (\S+?)\.?(?:\s|$)",
                  req.prompt, re.I)
    if not m:
        return None
    if "Write" not in req.tools:
        return Reply([Text("I have no Write tool to call.")], "write-file/unavailable")
    done = req.called("Write")
    if done:
        last = done[-1]
        text = f"I could not create the file: {last.result}" if last.is_error else f"Created {m.group(1)}."
        return Reply([Text(text)], "write-file/after")
    schema = req.tools["Write"]
    path_key = first_property(schema, ["file_path", "path"], "file_path")
    return Reply([ToolUse("Write", fit(schema, {path_key: m.group(1), "content": m.group(2)}))], "write-file/call")


_RUN = re.compile(r"^run(?: this bash command| the command)?:\s*(.+?)\s*$", re.I | re.S)


@rule("bash")
def _bash(req: Request, p: str) -> Reply | None:
    """"Run: CMD", "Run this bash command: CMD", "Run the command: CMD": a Bash call, then a summary."""
    m = _RUN.match(req.prompt)
    if not m:
        return None
    if "Bash" not in req.tools:
        return Reply([Text("I have no Bash tool to run that with.")], "bash/unavailable")
    done = req.called("Bash")
    if done:
        last = done[-1]
        if last.is_error:
            return Reply([Text(f"The command did not run: {last.result}")], "bash/after-error")
        output = _REMINDER.sub("", last.result or "").strip()
        return Reply([Text(f"The command ran. Output: {output}")], "bash/after")
    command = m.group(1)
    wanted = {"command": command, "description": f"Run {command.split()[0]}"}
    return Reply(with_thinking(req, [ToolUse("Bash", fit(req.tools["Bash"], wanted))]), "bash/call")


def _mentioned_tools(req: Request) -> tuple[list[str], list[str]]:
    """MCP tools the prompt names (by full name, or "the NAME tool"), available (callable or
    loadable) and not, in the order they are named."""
    known = [*req.tools, *req.deferred]
    found: list[tuple[int, str]] = []
    missing: list[tuple[int, str]] = []
    for m in re.finditer(r"mcp__\w+", req.prompt):
        (found if available(req, m.group(0)) else missing).append((m.start(), m.group(0)))
    for m in re.finditer(r"\b(?:the|use) (\w+) tool\b", req.prompt, re.I):
        short = m.group(1)
        if short.startswith("mcp__") or any(name == short for _, name in found + missing):
            continue
        match = [t for t in known if t.startswith("mcp__") and t.endswith(f"__{short}") and available(req, t)]
        if match:
            found.append((m.start(), match[0]))
        elif short.lower() not in ("write", "agent", "task", "bash", "grep", "glob"):
            missing.append((m.start(), short))
    names: list[str] = []
    for _, name in sorted(found):
        if name not in names:
            names.append(name)
    return names, [name for _, name in sorted(missing)]


def _mcp_arguments(req: Request, name: str) -> dict[str, Any]:
    """Arguments for ``name`` from the prompt: ``prop='v'``, else the quoted word after the
    tool's short name, else a placeholder of the property's type."""
    schema = req.tools.get(name, {})
    short = name.rsplit("__", 1)[-1]
    props = schema.get("properties") or {}
    wanted = schema.get("required") or list(props)
    args: dict[str, Any] = {}
    for prop in wanted:
        m = re.search(rf"\b{re.escape(prop)}\s*=\s*['\"]([^'\"]*)['\"]", req.prompt)
        if not m:
            m = re.search(rf"\b{re.escape(short)}\b[^'\".]*?['\"]([^'\"]*)['\"]", req.prompt)
        kind = (props.get(prop) or {}).get("type")
        if m:
            args[prop] = m.group(1)
        elif kind in ("number", "integer"):
            args[prop] = 1
        elif kind == "boolean":
            args[prop] = True
        else:
            args[prop] = "hello"
    return args


@rule("mcp-tools")
def _mcp(req: Request, p: str) -> Reply | None:
    """A prompt naming MCP tools: load the deferred ones with ToolSearch, call each (all at
    once, or one per turn when the prompt says "one at a time"), then report the results."""
    names, missing = _mentioned_tools(req)
    if not names and not missing:
        return None
    pending = [name for name in names if not req.called(name)]
    if pending:
        batch = pending[:1] if "one at a time" in p else pending
        load = load_first(req, batch)
        if load is not None:
            return load
        calls: list[Block] = [ToolUse(n, _mcp_arguments(req, n)) for n in batch]
        return Reply(calls, "mcp-tools/call")
    lines = []
    for call in req.calls:
        if call.name == "ToolSearch":
            continue
        status = "failed" if call.is_error else "returned"
        lines.append(f"{call.name} {status}: {_REMINDER.sub('', call.result or '').strip()}")
    for name in missing:
        lines.append(f"I have no tool named {name}.")
    return Reply([Text("\n".join(lines))], "mcp-tools/after")


@rule("reply-with")
def _reply_with(req: Request, p: str) -> Reply | None:
    """"Reply with exactly: X" / "Reply with: X": X."""
    m = re.search(r"reply with(?: exactly)?:\s*(.+?)\s*$", req.prompt, re.I | re.S)
    if not m:
        return None
    return Reply(with_thinking(req, [Text(m.group(1))]), "reply-with")


@rule("count")
def _count(req: Request, p: str) -> Reply | None:
    """"Count from A to B slowly": every number, streamed slowly so an interrupt can land."""
    m = re.search(r"count from (\d+) to (\d+)", p)
    if not m:
        return None
    numbers = ", ".join(str(n) for n in range(int(m.group(1)), int(m.group(2)) + 1))
    return Reply(with_thinking(req, [Text(numbers)]), "count", pace=0.05)


@rule("think")
def _think(req: Request, p: str) -> Reply | None:
    """The thinking prompts: reasoning in a thinking block (when enabled), the answer in text."""
    if "think of three jokes" in p:
        thought = (
            "Joke 1: why did the scarecrow win an award? He was outstanding in his field. "
            "Joke 2: I told my computer I needed a break; it said no problem, it would go to sleep. "
            "Joke 3: parallel lines have so much in common; it's a shame they'll never meet. "
            "I'll tell the first one."
        )
        text = "Why did the scarecrow win an award? Because he was outstanding in his field!"
        return Reply(with_thinking(req, [Text(text)], thought), "think/jokes")
    if "think step by step" in p and re.search(r"(\d+)\s*\+\s*(\d+)", p):
        a, b = map(int, re.search(r"(\d+)\s*\+\s*(\d+)", p).groups())
        thought = f"Step 1: start with {a}. Step 2: add {b} to it. Step 3: {a} + {b} = {a + b}."
        return Reply(with_thinking(req, [Text(f"{a} + {b} = {a + b}")], thought), "think/step")
    return None


@rule("arithmetic")
def _arithmetic(req: Request, p: str) -> Reply | None:
    """"What is A + B?": the sum."""
    m = re.search(r"what is (\d+)\s*\+\s*(\d+)", p)
    if not m:
        return None
    total = int(m.group(1)) + int(m.group(2))
    return Reply(with_thinking(req, [Text(str(total))]), "arithmetic")


_GREETINGS = [
    ("say hello in exactly 3 words", "Hello there, friend!"),
    ("say hello in one word", "Hello!"),
    ("say hello", "Hello! How can I help you today?"),
    ("say hi", "Hi there, I hope you are having a wonderful day!"),
]


@rule("greeting")
def _greeting(req: Request, p: str) -> Reply | None:
    """The greeting prompts."""
    for prefix, text in _GREETINGS:
        if p.startswith(prefix):
            return Reply(with_thinking(req, [Text(text)]), "greeting")
    return None


@rule("list-agents")
def _list_agents(req: Request, p: str) -> Reply | None:
    """"List available agents": the agent names the tool description lists, if any."""
    if "list available agents" not in p:
        return None
    return Reply([Text("These agents are available to me through the Agent tool.")], "list-agents")


@rule("fallback")
def _fallback(req: Request, p: str) -> Reply:
    """Anything else: a short answer."""
    return Reply(with_thinking(req, [Text("Done.")]), "fallback")


def decide(body: dict[str, Any]) -> Reply | ApiError:
    """The reply to one ``/v1/messages`` request body."""
    req = parse(body)
    p = req.prompt.lower()
    for _, f in _RULES:
        answer = f(req, p)
        if answer is not None:
            return answer
    raise AssertionError("the fallback rule always answers")
