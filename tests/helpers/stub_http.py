"""One helper for the stub OpenAI-compatible servers of the tests (all bound to 127.0.0.1)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(
    handler: BaseHTTPRequestHandler,
    payload: Any,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> None:
    """Answer the request being handled with ``payload`` as JSON (status, length, extra headers)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
