#!/usr/bin/env python3
"""Send a request exactly as written and keep the answer.

usage: raw_request.py HOST PORT REQUEST-FILE OUT-PREFIX

Sends REQUEST-FILE's bytes to HOST:PORT as they are -- a request line a
client library would refuse to write, headers that never end, a length the
body never reaches -- and keeps the connection open (no half-close: a
server waiting for more must time out on its own).  It reads the answer
until the server closes or 30 s pass, and writes OUT-PREFIX.code (the
status, 000 for no answer), OUT-PREFIX.headers (lower-case names, CRs
removed) and OUT-PREFIX.body (the body's bytes, untouched).
"""
import socket
import sys
import time


def main():
    host, port, req_file, out = sys.argv[1:5]
    with open(req_file, "rb") as f:
        request = f.read()
    answer = b""
    sock = socket.create_connection((host, int(port)), timeout=30)
    try:
        sock.sendall(request)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            answer += chunk
    except socket.timeout:
        pass
    finally:
        sock.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    code = parts[1] if len(parts) > 1 and parts[1].isdigit() else "000"
    with open(out + ".code", "w") as f:
        f.write(code + "\n")
    with open(out + ".headers", "w") as f:
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                f.write("%s:%s\n" % (name.lower(), value))
    with open(out + ".body", "wb") as f:
        f.write(body)


if __name__ == "__main__":
    main()
