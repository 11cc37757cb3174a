#!/usr/bin/env python3
"""A stand-in for Azure Storage whose clock is off (tests/e2e/tls_storage.sh).

usage: clock_skew_storage.py PORT SKEW-SECONDS

Answers every request on 127.0.0.1:PORT the way Azure answers a request
signed too far from its own time: 403 AuthenticationFailed, with a Date
header SKEW-SECONDS away from this machine's clock.  Azurite never checks
x-ms-date, so only a stand-in can show bindery's "check the clock" message.
"""
import sys
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, HTTPServer

SKEW = int(sys.argv[2])
BODY = (b'<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code>'
        b'<Message>Server failed to authenticate the request. Make sure the value of '
        b'Authorization header is formed correctly including the signature.</Message></Error>')


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.send_response_only(403)
        self.send_header("Date", formatdate(time.time() + SKEW, usegmt=True))
        self.send_header("x-ms-error-code", "AuthenticationFailed")
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(BODY)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = answer

    def log_message(self, fmt, *args):
        sys.stderr.write(fmt % args + "\n")


HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
