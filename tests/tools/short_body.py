#!/usr/bin/env python3
"""A client whose body ends before its Content-Length.

usage: short_body.py [--method METHOD] URL DECLARED-LENGTH BODY-FILE OUT-PREFIX [HEADER...]

Sends a POST (or METHOD: a tus PATCH) of URL (http://host:port/path?query) declaring DECLARED-LENGTH
bytes, sends BODY-FILE's bytes (fewer), then half-closes its side
(shutdown(SHUT_WR)): the body has ended for good.  It reads the answer
until the server closes or 20 s pass, and writes OUT-PREFIX.code (the
status, 000 for no answer), OUT-PREFIX.headers (lower-case names, CRs
removed) and OUT-PREFIX.body (the body's bytes, untouched).  Each HEADER is
"Name: value".  A raw socket because curl cannot half-close.
"""
import socket
import sys
import urllib.parse


def main():
    args = sys.argv[1:]
    method = "POST"
    if args[:1] == ["--method"]:
        method, args = args[1], args[2:]
    url, declared, body_file, out = args[0:4]
    extra = args[4:]
    u = urllib.parse.urlsplit(url)
    path = u.path + ("?" + u.query if u.query else "")
    with open(body_file, "rb") as f:
        body = f.read()
    head = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % u.netloc,
            "Content-Length: %d" % int(declared), "Connection: close"] + extra
    s = socket.create_connection((u.hostname, u.port or 80), timeout=20)
    answer = b""
    try:
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
        s.shutdown(socket.SHUT_WR)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass        # reset or timeout: keep whatever arrived
    finally:
        s.close()
    code, headers, payload = "000", b"", b""
    if b"\r\n\r\n" in answer:
        headers, payload = answer.split(b"\r\n\r\n", 1)
        status = headers.split(b"\r\n", 1)[0].split()
        if len(status) >= 2 and status[1].isdigit():
            code = status[1].decode()
    lines = [l.decode("latin-1") for l in headers.split(b"\r\n")[1:]]
    with open(out + ".code", "w") as f:
        f.write(code + "\n")
    with open(out + ".headers", "w") as f:
        for l in lines:
            name, _, value = l.partition(":")
            f.write(name.lower() + ":" + value + "\n")
    with open(out + ".body", "wb") as f:
        f.write(payload)


if __name__ == "__main__":
    main()
