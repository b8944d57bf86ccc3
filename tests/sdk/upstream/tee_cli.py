#!/usr/bin/env python3
"""Runs ``$AGENTLOOP_E2E_REAL_CLI`` with this script's arguments, recording the launch.

Under ``$AGENTLOOP_E2E_CAPTURE_DIR`` it writes ``N.argv`` (JSON list), ``N.stdin``,
``N.stdout``, ``N.stderr`` and ``N.exit``, where N counts the launches of the current test.
The streams pass through unchanged, SIGTERM/SIGINT are passed on, and the CLI's exit status is
this script's: it exits as soon as the CLI does, without waiting for stdin to close. The
capture mode of ``e2e_plugin.py``; a diagnostic, not part of what is measured.
"""

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path


def _pump(src, sinks, close_last: bool) -> None:
    """Copy ``src`` to every sink until EOF, then close the last sink if asked."""
    while True:
        chunk = os.read(src.fileno(), 65536)
        if not chunk:
            break
        for sink in sinks:
            try:
                sink.write(chunk)
                sink.flush()
            except (BrokenPipeError, OSError):
                pass
    if close_last:
        try:
            sinks[-1].close()
        except OSError:
            pass


def main() -> int:
    """Run and record the CLI; return its exit status."""
    real = os.environ["AGENTLOOP_E2E_REAL_CLI"]
    directory = Path(os.environ["AGENTLOOP_E2E_CAPTURE_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    n = 1
    while (directory / f"{n}.argv").exists():
        n += 1
    prefix = directory / str(n)
    (directory / f"{n}.argv").write_text(json.dumps([real, *sys.argv[1:]]) + "\n")
    child = subprocess.Popen([real, *sys.argv[1:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    files = [open(f"{prefix}.{name}", "wb") for name in ("stdin", "stdout", "stderr")]
    pumps = [
        threading.Thread(target=_pump, args=(sys.stdin.buffer, [files[0], child.stdin], True), daemon=True),
        threading.Thread(target=_pump, args=(child.stdout, [files[1], sys.stdout.buffer], False), daemon=True),
        threading.Thread(target=_pump, args=(child.stderr, [files[2], sys.stderr.buffer], False), daemon=True),
    ]
    for p in pumps:
        p.start()
    status = child.wait()
    pumps[1].join()
    pumps[2].join()
    for f in files:
        f.flush()
    (directory / f"{n}.exit").write_text(f"{status}\n")
    sys.stdout.flush()
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    os._exit(main())
