"""A local stand-in for the Anthropic Messages API, for running the Agent SDK's e2e suite.

It listens on 127.0.0.1 only, serves each connection on its own thread, and answers:

- ``POST /v1/messages`` (any query string, e.g. ``?beta=true``): a reply chosen by
  ``policy.decide`` from the request body alone, streamed as real server-sent events
  (``message_start``, ``content_block_start``, ``content_block_delta``, ``content_block_stop``,
  ``message_delta``, ``message_stop``) or, for ``"stream": false``, one JSON message;
- ``POST /v1/messages/count_tokens``: an estimate from the body's size;
- ``HEAD``/``GET`` of anything else (Claude Code's ``/api/hello`` connectivity check, ...): 200.

Every response carries a ``request-id`` header. Every request is appended, with its reply, to
the JSON-lines log named by ``--log`` so a run can be compared request by request between two
CLIs.

Run: ``python3 mock_server.py --port-file FILE [--port N] [--log FILE]``; the port it bound is
written to ``FILE`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import policy

_ids = itertools.count(1)
_log_lock = threading.Lock()


def _next_id(prefix: str) -> str:
    """A fresh identifier shaped like the API's (``msg_…``, ``req_…``, ``toolu_…``)."""
    return f"{prefix}_mock{next(_ids):08d}"


def _estimate_tokens(payload: Any) -> int:
    """A rough token count: four characters of JSON per token."""
    return max(1, len(json.dumps(payload)) // 4)


class Handler(BaseHTTPRequestHandler):
    """One connection; keep-alive, chunked SSE bodies."""

    protocol_version = "HTTP/1.1"
    server_version = "mock-messages-api"
    log_path: str | None = None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        """Quiet: the JSON-lines log is the record."""

    def _record(self, entry: dict[str, Any]) -> None:
        if not self.log_path:
            return
        entry["time"] = time.time()
        with _log_lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def _send_json(self, status: int, payload: Any, request_id: str) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", request_id)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server naming
        self._record({"method": "HEAD", "path": self.path})
        self._send_json(200, {}, _next_id("req"))

    def do_GET(self) -> None:  # noqa: N802
        self._record({"method": "GET", "path": self.path})
        self._send_json(200, {}, _next_id("req"))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        request_id = _next_id("req")
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._record({"method": "POST", "path": self.path, "raw": raw.decode(errors="replace")})
            self._send_json(
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": "body is not JSON"}},
                request_id,
            )
            return
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() in _LOGGED_HEADERS}
        if path.endswith("/count_tokens"):
            self._record({"method": "POST", "path": self.path, "headers": headers, "body": body})
            self._send_json(200, {"input_tokens": _estimate_tokens(body)}, request_id)
            return
        if not path.endswith("/v1/messages"):
            self._record({"method": "POST", "path": self.path, "headers": headers, "body": body})
            self._send_json(
                404,
                {"type": "error", "error": {"type": "not_found_error", "message": f"no route {path}"}},
                request_id,
            )
            return
        reply = policy.decide(body)
        self._record(
            {"method": "POST", "path": self.path, "headers": headers, "body": body, "reply": reply.describe()}
        )
        if isinstance(reply, policy.ApiError):
            self._send_json(
                reply.status,
                {"type": "error", "error": {"type": reply.kind, "message": reply.message}, "request_id": request_id},
                request_id,
            )
            return
        message = self._message(body, reply)
        if body.get("stream"):
            self._stream(message, reply, request_id)
        else:
            self._send_json(200, message, request_id)

    def _message(self, body: dict[str, Any], reply: policy.Reply) -> dict[str, Any]:
        """The complete assistant message ``reply`` stands for."""
        content: list[dict[str, Any]] = []
        for block in reply.blocks:
            if isinstance(block, policy.Text):
                content.append({"type": "text", "text": block.text})
            elif isinstance(block, policy.Thinking):
                content.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
            else:
                content.append({"type": "tool_use", "id": _next_id("toolu"), "name": block.name, "input": block.input})
        return {
            "id": _next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-sonnet-4-5"),
            "content": content,
            "stop_reason": reply.stop_reason(),
            "stop_sequence": None,
            "usage": {
                "input_tokens": _estimate_tokens(body.get("messages", [])),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": _estimate_tokens(content),
                "service_tier": "standard",
            },
        }

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, name: str, payload: dict[str, Any]) -> None:
        self._chunk(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())

    def _stream(self, message: dict[str, Any], reply: policy.Reply, request_id: str) -> None:
        """``message`` as the API streams it, pausing ``reply.pace`` seconds between deltas."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", request_id)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            start = dict(message, content=[], stop_reason=None)
            start["usage"] = dict(message["usage"], output_tokens=1)
            self._event("message_start", {"type": "message_start", "message": start})
            self._event("ping", {"type": "ping"})
            for index, block in enumerate(message["content"]):
                self._stream_block(index, block, reply.pace)
            self._event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": message["usage"]["output_tokens"]},
                },
            )
            self._event("message_stop", {"type": "message_stop"})
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            # The client hung up mid-stream (an interrupt): nothing more to send.
            self.close_connection = True

    def _stream_block(self, index: int, block: dict[str, Any], pace: float) -> None:
        kind = block["type"]
        if kind == "text":
            self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "text", "text": ""}})
            for piece in policy.pieces(block["text"]):
                self._delta(index, {"type": "text_delta", "text": piece}, pace)
        elif kind == "thinking":
            self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            for piece in policy.pieces(block["thinking"]):
                self._delta(index, {"type": "thinking_delta", "thinking": piece}, pace)
            self._delta(index, {"type": "signature_delta", "signature": block["signature"]}, 0)
        else:
            self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": dict(block, input={})})
            for piece in policy.pieces(json.dumps(block["input"])):
                self._delta(index, {"type": "input_json_delta", "partial_json": piece}, pace)
        self._event("content_block_stop", {"type": "content_block_stop", "index": index})

    def _delta(self, index: int, delta: dict[str, Any], pace: float) -> None:
        if pace:
            time.sleep(pace)
        self._event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


_LOGGED_HEADERS = {"anthropic-beta", "anthropic-version", "user-agent", "x-app", "x-stainless-helper-method"}


def main() -> int:
    """Serve until killed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log")
    args = parser.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    with open(args.port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
