#!/usr/bin/python3
"""webhook_receiver.py - a Standard Webhooks receiver on loopback, for tests.

bindery delivers its events as Standard Webhooks
(https://www.standardwebhooks.com/); this is the independent implementation
that checks what it sends, with the standard library alone (hmac,
hmac.compare_digest).  /usr/bin/python3 on purpose, as the suite's others.

    webhook_receiver.py --port-file F --control-port-file F2 --secret-file S
        [--tolerance SECONDS] --log FILE --events FILE

Two servers on 127.0.0.1, each on a port of the kernel's choosing: the
receiver (its port written to F) and its control endpoint (F2).  F2 is
written first and F last, both atomically once listening: when F exists,
both serve.  SIGTERM stops it (status 0) and removes both files.

The secret file holds "whsec_" and the base64 of the key's bytes (a final
newline dropped); the HMAC key is those bytes.  The secret is never logged.

The receiver: every POST, to any path, is an event.  Its body is read
whole (Content-Length required: 411 without one, 413 over 1 MiB, in every
mode but down, recorded invalid; either closes the connection).  It is
valid when the headers webhook-id, webhook-timestamp (Unix seconds, digits
only) and webhook-signature are present, the timestamp is within
--tolerance (default 300) seconds of now, either way, and one of the
header's space-separated "v1,<base64>" signatures is
HMAC-SHA256(key, "<id>.<timestamp>.<body>") (other versions are ignored).
Every event is one line of --events, written whole under a lock before the
answer is sent (for "slow", before the delay):
    {"path": the request target, "webhook_id": str|null (both as the UTF-8
     they were sent in), "timestamp": int|null,
     "received": float (time.time() on arrival), "valid": bool,
     "why": str (only when invalid), "content_type": str|null,
     "body": the body parsed as JSON, null when it is not JSON,
     "status": what it answers, "attempt": the how-manieth event with this
     webhook-id since start (or the last reset), 1-based; null without one}
The answer, by the mode:
    ok        204 valid; 400 a header missing or the timestamp malformed,
              stale or in the future; 401 no signature matches
    status N  N to every event (valid or not)
    slow D    waits D seconds, then answers as ok does
    gone      410 to every event
    redirect  307 to every event, Location: this same URL (a client must
              not follow it: one event is recorded per request)
    down      nothing: the listening socket is closed (connects are
              refused) and every open connection to it is shut down, as if
              the receiver had died; leaving down listens again on the same
              port (SO_REUSEADDR)
GET, PUT, PATCH and DELETE: 405 (other methods 501), not events.

The control endpoint (its own port, up in every mode):
POST /_control, a JSON object, each member optional:
    {"reset": true}     applied first: mode ok, the counts and the attempt
                        numbers forgotten, the events file emptied
    {"mode": "ok"|"status"|"slow"|"gone"|"redirect"|"down",
     "status": N        with mode status only (and required by it), 200-599
     "delay": SECONDS   with mode slow only (and required by it), 0-600}
  answers 200 and the state as GET does; 400 {"error"} for anything else
  (then nothing changes).
GET /_control: {"mode", "status" (N or null), "delay" (D or null),
    "received", "valid", "invalid", "by_status": {"204": n, ...}}
GET /_events: the events file's lines as one JSON array.

One line per request goes to --log (method, path, status, why; "control"
first for the control port's), and one per mode change; never the secret,
a signature or a body.
"""

import argparse
import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BODY_MAX = 1024 * 1024
MODES = ("ok", "status", "slow", "gone", "redirect", "down")
TIMESTAMP_RE = re.compile(r"[0-9]{1,12}")


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def as_utf8(text):
    """A header's or the request line's text (http.server decodes them as
    Latin-1) as the UTF-8 it was sent in, when it is UTF-8."""
    if text is None:
        return None
    try:
        return text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


def read_key(path):
    """The HMAC key from a secret file: "whsec_" and base64; ValueError
    (never quoting the file) otherwise."""
    with open(path, encoding="ascii") as f:
        text = f.read()
    if text.endswith("\n"):
        text = text[:-1]
    if not text.startswith("whsec_"):
        raise ValueError(f"{path}: the secret does not start with whsec_")
    try:
        key = base64.b64decode(text[len("whsec_"):], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{path}: what follows whsec_ is not base64") from None
    if not key:
        raise ValueError(f"{path}: the key is empty")
    return key


class Receiver:
    """The state the handler threads of both servers share."""

    def __init__(self, args):
        self.key = read_key(args.secret_file)
        self.tolerance = args.tolerance
        self.events_path = args.events
        self.events = open(args.events, "a", encoding="utf-8")
        self.log = open(args.log, "a", encoding="utf-8")
        self.lock = threading.Lock()       # state, counts, both files
        self.switch = threading.Lock()     # one mode change at a time
        self.server = None                 # the receiver's HTTP server
        self.port = None
        self.mode, self.status, self.delay = "ok", None, None
        self.attempts = {}
        self.counts = {"received": 0, "valid": 0, "invalid": 0, "by_status": {}}

    def note(self, line):
        with self.lock:
            self.note_locked(line)

    def note_locked(self, line):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.log.write(f"{stamp} {line}\n")
        self.log.flush()

    def state(self):
        with self.lock:
            return {"mode": self.mode, "status": self.status,
                    "delay": self.delay, **json.loads(compact(self.counts))}

    def verify(self, headers, body):
        """(webhook_id, timestamp, why): why is None when the event is
        valid, else what failed first, and the status ok mode gives it is
        400 (headers, timestamp) or 401 (signature)."""
        wid = headers.get("webhook-id")
        ts_text = headers.get("webhook-timestamp")
        sig = headers.get("webhook-signature")
        ts = int(ts_text) if ts_text and TIMESTAMP_RE.fullmatch(ts_text) else None
        absent = [n for n, v in (("webhook-id", wid), ("webhook-timestamp", ts_text),
                                 ("webhook-signature", sig)) if not v]
        if absent:
            return wid or None, ts, (400, "missing header " + ", ".join(absent))
        if ts is None:
            return wid, None, (400, "timestamp is not Unix seconds")
        now = int(time.time())
        if now - ts > self.tolerance:
            return wid, ts, (400, f"stale timestamp: {now - ts} s old "
                                  f"(tolerance {self.tolerance} s)")
        if ts - now > self.tolerance:
            return wid, ts, (400, f"timestamp {ts - now} s in the future "
                                  f"(tolerance {self.tolerance} s)")
        # http.server decodes header lines as Latin-1: encoding them back
        # gives the bytes the sender signed.
        signed = f"{wid}.{ts_text}.".encode("latin-1") + body
        expected = hmac.new(self.key, signed, hashlib.sha256).digest()
        v1 = 0
        for part in sig.split():
            version, _, value = part.partition(",")
            if version != "v1":
                continue
            v1 += 1
            try:
                given = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                continue
            if hmac.compare_digest(given, expected):
                return wid, ts, None
        if v1 == 0:
            return wid, ts, (401, "no v1 signature in webhook-signature")
        return wid, ts, (401, f"no signature matches ({v1} v1 given)")

    def record(self, event):
        """Number the attempt, count it, append its line: one lock."""
        with self.lock:
            wid = event["webhook_id"]
            if wid is not None:
                self.attempts[wid] = self.attempts.get(wid, 0) + 1
                event["attempt"] = self.attempts[wid]
            else:
                event["attempt"] = None
            c = self.counts
            c["received"] += 1
            c["valid" if event["valid"] else "invalid"] += 1
            key = str(event["status"])
            c["by_status"][key] = c["by_status"].get(key, 0) + 1
            self.events.write(compact(event) + "\n")
            self.events.flush()

    def event_lines(self):
        with self.lock:
            with open(self.events_path, encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]

    # -- the receiver's socket ---------------------------------------------

    def listen(self, port):
        """Start the receiver's server on port (0: the kernel's choice).
        A port just closed may take a moment to be free again."""
        deadline = time.monotonic() + 5
        while True:
            try:
                server = ReceiverServer(("127.0.0.1", port), ReceiverHandler)
                break
            except OSError:
                if port == 0 or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        server.receiver = self
        self.server, self.port = server, server.server_address[1]
        # A short poll: "down" waits for the loop to notice its shutdown.
        threading.Thread(target=server.serve_forever, args=(0.05,),
                         daemon=True, name="receiver").start()

    def close(self):
        """Stop listening and cut every connection, as a dead process would."""
        server, self.server = self.server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.cut_connections()

    def set_mode(self, asked):
        """Apply a checked control request; the new state."""
        with self.switch:
            with self.lock:
                before = self.mode
                if asked.get("reset"):
                    self.mode, self.status, self.delay = "ok", None, None
                    self.attempts = {}
                    self.counts = {"received": 0, "valid": 0, "invalid": 0,
                                   "by_status": {}}
                    self.events.truncate(0)
                    self.events.seek(0)
                    self.note_locked("reset")
                if "mode" in asked:
                    self.mode = asked["mode"]
                    self.status = asked.get("status")
                    self.delay = asked.get("delay")
                    extra = [str(v) for v in (self.status, self.delay)
                             if v is not None]
                    self.note_locked(" ".join(["mode", self.mode] + extra))
                after = self.mode
            if after == "down" and before != "down":
                self.close()
                self.note(f"closed 127.0.0.1:{self.port}")
            elif after != "down" and before == "down":
                self.listen(self.port)
                self.note(f"listening again on 127.0.0.1:{self.port}")
        return self.state()


class ReceiverServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, *a, **kw):
        self.connections = set()
        self.conn_lock = threading.Lock()
        super().__init__(*a, **kw)

    def process_request_thread(self, request, client_address):
        with self.conn_lock:
            self.connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.conn_lock:
                self.connections.discard(request)

    def cut_connections(self):
        with self.conn_lock:
            conns = list(self.connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address):
        # A connection cut by "down", or a client gone: one line, no trace.
        self.receiver.note(f"connection error: {sys.exc_info()[1]!r}")


class Base(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "webhook-receiver"
    sys_version = ""
    log_prefix = ""

    @property
    def receiver(self):
        return self.server.receiver

    def log_message(self, format, *args):  # noqa: A002 - the base's name
        pass  # our own line per request instead

    def answer(self, status, body=None, headers=(), why=None):
        data = b"" if body is None else compact(body).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if data:
            self.wfile.write(data)
        line = f"{self.log_prefix}{self.command} {self.path[:200]} {status}"
        self.receiver.note(line + (f" {why}" if why else ""))

    def read_body(self):
        """The body, or (status, why) when it cannot be read whole; the
        connection is then closed after the answer."""
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            return 411, "no Content-Length"
        if int(length) > BODY_MAX:
            self.close_connection = True
            return 413, f"a body of {length} bytes (at most {BODY_MAX})"
        return self.rfile.read(int(length))


class ReceiverHandler(Base):
    def do_POST(self):
        received = time.time()
        r = self.receiver
        raw = self.read_body()
        with r.lock:
            mode, status, delay = r.mode, r.status, r.delay
        if isinstance(raw, tuple):
            wid = self.headers.get("webhook-id") or None
            ts = None
            why, code, body = raw[1], raw[0], None
        else:
            wid, ts, failed = r.verify(self.headers, raw)
            code, why = failed if failed else (204, None)
            try:
                body = json.loads(raw)
            except ValueError:  # also a body that is not UTF-8
                body = None
            if mode == "status":
                code = status
            elif mode == "gone":
                code = 410
            elif mode == "redirect":
                code = 307
        event = {"path": as_utf8(self.path), "webhook_id": as_utf8(wid),
                 "timestamp": ts,
                 "received": received, "valid": why is None}
        if why is not None:
            event["why"] = why
        event.update({"content_type": self.headers.get("Content-Type"),
                      "body": body, "status": code})
        r.record(event)
        if mode == "slow" and delay:
            time.sleep(delay)
        headers = ()
        if code == 307:
            headers = (("Location", f"http://127.0.0.1:{r.port}{self.path}"),)
        self.answer(code, headers=headers, why=why)

    def refuse_method(self):
        self.close_connection = True
        self.answer(405, {"error": "POST only"}, headers=(("Allow", "POST"),))

    do_GET = do_PUT = do_DELETE = do_PATCH = refuse_method


class ControlHandler(Base):
    log_prefix = "control "

    def do_GET(self):
        if self.path == "/_control":
            return self.answer(200, self.receiver.state())
        if self.path == "/_events":
            return self.answer(200, self.receiver.event_lines())
        self.answer(404, {"error": "GET /_control or /_events"})

    def do_POST(self):
        if self.path != "/_control":
            return self.answer(404, {"error": "POST /_control"})
        raw = self.read_body()
        try:
            if isinstance(raw, tuple):
                raise ValueError(raw[1])
            asked = json.loads(raw)
            if not isinstance(asked, dict):
                raise ValueError("not a JSON object")
            unknown = set(asked) - {"mode", "status", "delay", "reset"}
            if unknown:
                raise ValueError(f"unknown members {sorted(unknown)}")
            if "reset" in asked and not isinstance(asked["reset"], bool):
                raise ValueError("reset: true or false")
            mode = asked.get("mode")
            if "mode" in asked and mode not in MODES:
                raise ValueError(f"mode: one of {', '.join(MODES)}")
            st, dl = asked.get("status"), asked.get("delay")
            if ("status" in asked) != (mode == "status"):
                raise ValueError("status goes with mode status, and only there")
            if ("delay" in asked) != (mode == "slow"):
                raise ValueError("delay goes with mode slow, and only there")
            if "status" in asked and (isinstance(st, bool) or not isinstance(st, int)
                                      or not 200 <= st <= 599):
                raise ValueError("status: an integer, 200 to 599")
            if "delay" in asked and (isinstance(dl, bool)
                                     or not isinstance(dl, (int, float))
                                     or not 0 <= dl <= 600):
                raise ValueError("delay: seconds, 0 to 600")
        except ValueError as e:
            return self.answer(400, {"error": str(e)}, why=str(e))
        try:
            state = self.receiver.set_mode(asked)
        except OSError as e:
            return self.answer(500, {"error": f"cannot listen again: {e}"})
        self.answer(200, state)


class ControlServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


def write_port(path, port):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port-file", required=True)
    p.add_argument("--control-port-file", required=True)
    p.add_argument("--secret-file", required=True)
    p.add_argument("--tolerance", type=int, default=300)
    p.add_argument("--log", required=True)
    p.add_argument("--events", required=True)
    args = p.parse_args()
    if args.tolerance < 0:
        p.error("--tolerance must not be negative")
    try:
        r = Receiver(args)
    except (OSError, ValueError) as e:
        print(f"webhook_receiver: {e}", file=sys.stderr)
        return 2

    def stop(signum, frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)

    control = ControlServer(("127.0.0.1", 0), ControlHandler)
    control.receiver = r
    r.listen(0)
    write_port(args.control_port_file, control.server_address[1])
    write_port(args.port_file, r.port)
    r.note(f"listening on 127.0.0.1:{r.port}, control on "
           f"127.0.0.1:{control.server_address[1]}")
    try:
        control.serve_forever()
    finally:
        control.server_close()
        if r.server is not None:
            r.server.server_close()
        for path in (args.port_file, args.control_port_file):
            try:
                os.unlink(path)
            except OSError:
                pass
        r.note("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
