#!/usr/bin/env python3
"""slow_client.py - one HTTP/1.1 request whose body arrives slowly, for
tests/e2e/slow_clients.sh (slow clients must not pin workers).

It sends the request line and headers (with the Content-Length it is told
to declare), --first body bytes at once, then --chunk bytes every --every
seconds (never, with --every 0: a silent client) until the body is complete,
the server answers or closes, or --give-up seconds have passed.  The body is
b'x' repeated: nothing binary passes through a shell.

It prints one line:  STATUS SECONDS ERROR CLOSED
  STATUS   the answer's status code, 000 when none came
  SECONDS  from connecting to the answer's status line (or to giving up)
  ERROR    the JSON answer's "error" field, - when there is none
  CLOSED   seconds until the server closed the connection after answering
           (with --until-close; - otherwise or when it never did)
"""
import argparse
import json
import select
import socket
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--port', type=int, required=True)
    ap.add_argument('--path', required=True)
    ap.add_argument('--method', default='POST')
    ap.add_argument('--header', action='append', default=[])
    ap.add_argument('--length', type=int, required=True, help='declared Content-Length')
    ap.add_argument('--first', type=int, default=0, help='body bytes sent with the headers')
    ap.add_argument('--every', type=float, default=0.0, help='seconds between chunks; 0: silent')
    ap.add_argument('--chunk', type=int, default=1)
    ap.add_argument('--give-up', type=float, default=60.0)
    ap.add_argument('--until-close', action='store_true',
                    help='after the answer keep trickling and wait for the server to close')
    return ap.parse_args()


def dechunk(body):
    """(payload, done) of a chunked body received so far."""
    out = b''
    while True:
        line, sep, rest = body.partition(b'\r\n')
        if not sep:
            return out, False
        try:
            size = int(line.split(b';')[0], 16)
        except ValueError:
            return out, True
        if size == 0:
            return out, True
        if len(rest) < size + 2:
            return out, False
        out += rest[:size]
        body = rest[size + 2:]


def answer_complete(data):
    """(status, error, done): done once the headers and the body (its
    Content-Length bytes, or every chunk of a chunked one) are in."""
    head, sep, body = data.partition(b'\r\n\r\n')
    if not sep:
        return None, None, False
    lines = head.split(b'\r\n')
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, None, False
    length = None
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            length = int(value.strip())
        if name.strip().lower() == b'transfer-encoding' and b'chunked' in value.lower():
            chunked = True
    if chunked:
        body, done = dechunk(body)
        if not done:
            return status, None, False
    elif length is not None and len(body) < length:
        return status, None, False
    else:
        body = body[:length]
    error = '-'
    try:
        error = json.loads(body.decode()).get('error', '-')
    except (ValueError, UnicodeDecodeError, AttributeError):
        pass
    return status, error, True


def main():
    a = parse_args()
    start = time.monotonic()
    s = socket.create_connection(('127.0.0.1', a.port), timeout=10)
    s.setblocking(False)
    head = '%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n' % (
        a.method, a.path, a.port, a.length)
    head += ''.join(h + '\r\n' for h in a.header) + '\r\n'
    pending = head.encode() + b'x' * min(a.first, a.length)
    sent_body = min(a.first, a.length)
    data = b''
    status, error, answered_at, closed_at = None, '-', None, None
    next_chunk = start + a.every if a.every > 0 else None
    writable = True
    while time.monotonic() - start < a.give_up:
        now = time.monotonic()
        if next_chunk is not None and now >= next_chunk and sent_body < a.length:
            n = min(a.chunk, a.length - sent_body)
            pending += b'x' * n
            sent_body += n
            next_chunk += a.every
        if pending and writable:
            try:
                pending = pending[s.send(pending):]
            except BlockingIOError:
                pass
            except OSError:
                writable = False	# the server stopped reading: wait for its answer
        wait = 0.05 if next_chunk is None else max(0.0, min(0.05, next_chunk - time.monotonic()))
        r, _, _ = select.select([s], [], [], wait)
        if not r:
            continue
        try:
            got = s.recv(65536)
        except BlockingIOError:
            continue
        except OSError:
            got = b''
        if not got:
            closed_at = time.monotonic()
            break
        data += got
        if answered_at is None:
            st, err, done = answer_complete(data)
            if done:
                status, error, answered_at = st, err, time.monotonic()
                if not a.until_close:
                    break
    s.close()
    if answered_at is None:
        st, err, done = answer_complete(data)
        if st is not None:
            status, error = st, err or '-'
            answered_at = closed_at or time.monotonic()
    seconds = (answered_at or time.monotonic()) - start
    closed = '-'
    if a.until_close and closed_at is not None:
        closed = '%.2f' % (closed_at - start)
    print('%03d %.2f %s %s' % (status or 0, seconds, error, closed))
    return 0


if __name__ == '__main__':
    sys.exit(main())
