"""A tiny stand-in engine for the launcher tests (stdlib only): /health, /load (in-flight
count, like vLLM's), /v1/completions (sleeps --latency s), /role (in-place role switch) and
/load_weights. Started with --warm it has no weights: completions answer 503 until weights
are loaded."""

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--role", default="colocated")
ap.add_argument("--warm", action="store_true")
ap.add_argument("--latency", type=float, default=0.05)
ap.add_argument("--startup", type=float, default=0.0)
a = ap.parse_args()

state = {"inflight": 0, "role": a.role, "weights": not a.warm, "served": 0, "up_at": time.monotonic() + a.startup}
lock = threading.Lock()


class H(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            return self._json(200 if time.monotonic() >= state["up_at"] else 503, {})
        if self.path == "/load":
            return self._json(200, {"server_load": state["inflight"]})
        if self.path == "/info":
            return self._json(200, state)
        self._json(404, {})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/v1/completions":
            if not state["weights"]:
                return self._json(503, {"error": "no weights"})
            with lock:
                state["inflight"] += 1
            time.sleep(float(body.get("latency", a.latency)))
            with lock:
                state["inflight"] -= 1
                state["served"] += 1
            return self._json(200, {"role": state["role"], "text": "ok"})
        if self.path == "/role":
            state["role"] = body["role"]
            return self._json(200, state)
        if self.path == "/load_weights":
            time.sleep(0.05)
            state["weights"] = True
            return self._json(200, {"source": body.get("source", "peer")})
        self._json(404, {})


ThreadingHTTPServer((a.host, a.port), H).serve_forever()
