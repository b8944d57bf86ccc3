#!/usr/bin/env python3
"""Prints the mock's request log (``requests.jsonl``) one request a line: the prompt the
policy read, the model, how many tools were offered and deferred, the calls made since the
prompt, and the rule that answered with what. ``show_requests.py LOG [SUBSTRING]`` keeps only
requests whose prompt contains SUBSTRING. A diagnostic for comparing two CLIs' runs."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import policy  # noqa: E402


def main() -> int:
    """Print the log."""
    needle = sys.argv[2] if len(sys.argv) > 2 else None
    for line in open(sys.argv[1], encoding="utf-8"):
        entry = json.loads(line)
        body = entry.get("body")
        if entry["method"] != "POST" or not isinstance(body, dict) or "messages" not in body:
            continue
        req = policy.parse(body)
        if needle and needle not in req.prompt:
            continue
        calls = ", ".join(f"{c.name}{'!' if c.is_error else ''}" for c in req.calls)
        reply = entry.get("reply") or {}
        blocks = "; ".join(
            f"{b['type']}:{b.get('name') or ''}{json.dumps(b.get('input') or b.get('text') or '')[:80]}"
            for b in reply.get("blocks", [])
        ) or f"{reply.get('status')} {reply.get('message')}"
        print(f"{req.model} tools={len(req.tools)} deferred={len(req.deferred)} think={req.thinking} "
              f"| {req.prompt[:60]!r} | calls=[{calls}] -> {reply.get('rule')}: {blocks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
