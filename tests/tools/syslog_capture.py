#!/usr/bin/env python3
"""syslog_capture.py OUT CMD [ARG...] - what CMD sends to syslog, into OUT.

Run it in a mount namespace of its own (`unshare -m`): it mounts a tmpfs
over /dev there (nothing outside the namespace sees it), makes null, zero,
random and urandom, binds a datagram socket at /dev/log where syslog(3)
writes, runs CMD (stdin, stdout and stderr inherited) and writes each
message it received, one a line, to OUT.  Exit status: CMD's.
"""
import os
import socket
import stat
import subprocess
import sys


def main(argv):
    if len(argv) < 3:
        print("usage: syslog_capture.py OUT CMD [ARG...]", file=sys.stderr)
        return 2
    out, cmd = argv[1], argv[2:]
    subprocess.run(["mount", "-t", "tmpfs", "bindery-syslog-test", "/dev"], check=True)
    for name, minor in (("null", 3), ("zero", 5), ("random", 8), ("urandom", 9)):
        os.mknod("/dev/" + name, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("/dev/log")
    rc = subprocess.run(cmd).returncode
    sock.settimeout(0.3)
    with open(out, "wb") as f:
        while True:
            try:
                msg = sock.recv(65536)
            except socket.timeout:
                break
            f.write(msg.rstrip(b"\n") + b"\n")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
