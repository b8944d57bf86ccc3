#!/usr/bin/env python3
"""Puts two capture directories (``AGENTLOOP_E2E_CAPTURE`` of two runs) side by side.

``compare_capture.py A B [SUBSTRING]``: for each test directory present in either (whose name
contains SUBSTRING, if given) and each launch N, prints both CLIs' argv differences, exit
status, the sequence of stdout frames (``type/subtype``, stream events as ``stream:<event>``,
repeats folded), and the fields of each ``result`` frame the SDK reads. A diagnostic.
"""

import json
import sys
from pathlib import Path

_RESULT_FIELDS = ("subtype", "is_error", "result", "errors", "terminal_reason", "api_error_status",
                  "stop_reason", "num_turns", "permission_denials", "structured_output", "origin")


def _frames(path: Path) -> list[dict]:
    frames = []
    for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
        try:
            frames.append(json.loads(line))
        except json.JSONDecodeError:
            frames.append({"type": "<not json>", "line": line[:120]})
    return frames


def _label(frame: dict) -> str:
    if frame.get("type") == "stream_event":
        return f"stream:{(frame.get('event') or {}).get('type')}"
    if frame.get("type") in ("control_request", "control_response"):
        inner = frame.get("request") or frame.get("response") or {}
        return f"{frame['type']}:{inner.get('subtype')}"
    return "/".join(str(p) for p in (frame.get("type"), frame.get("subtype")) if p)


def _folded(labels: list[str]) -> list[str]:
    out: list[str] = []
    for label in labels:
        if out and out[-1].split(" ×")[0] == label:
            count = int(out[-1].split(" ×")[1]) + 1 if " ×" in out[-1] else 2
            out[-1] = f"{label} ×{count}"
        else:
            out.append(label)
    return out


def _launch(directory: Path, n: int) -> dict:
    argv = directory / f"{n}.argv"
    if not argv.exists():
        return {}
    frames = _frames(directory / f"{n}.stdout")
    exit_file = directory / f"{n}.exit"
    return {
        "argv": json.loads(argv.read_text())[1:],
        "exit": exit_file.read_text().strip() if exit_file.exists() else "?",
        "frames": _folded([_label(f) for f in frames]),
        "results": [{k: f.get(k) for k in _RESULT_FIELDS if k in f} for f in frames if f.get("type") == "result"],
        "stderr": (directory / f"{n}.stderr").read_text(errors="replace").strip()[:400]
        if (directory / f"{n}.stderr").exists() else "",
    }


def main() -> int:
    """Print the comparison."""
    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    needle = sys.argv[3] if len(sys.argv) > 3 else ""
    tests = sorted({p.name for p in [*a.iterdir(), *b.iterdir()] if p.is_dir() and needle in p.name})
    for test in tests:
        print(f"#### {test}")
        n = 1
        while (a / test / f"{n}.argv").exists() or (b / test / f"{n}.argv").exists():
            left, right = _launch(a / test, n), _launch(b / test, n)
            print(f"  launch {n}")
            only_a = [x for x in left.get("argv", []) if x not in right.get("argv", [])]
            only_b = [x for x in right.get("argv", []) if x not in left.get("argv", [])]
            if only_a or only_b:
                print(f"    argv only in {a.name}: {only_a}  only in {b.name}: {only_b}")
            for side, data in ((a.name, left), (b.name, right)):
                print(f"    [{side}] exit {data.get('exit')}: {' '.join(data.get('frames', []))}")
                for result in data.get("results", []):
                    print(f"    [{side}] result {json.dumps(result)[:600]}")
                if data.get("stderr"):
                    print(f"    [{side}] stderr {data['stderr']!r}")
            n += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
