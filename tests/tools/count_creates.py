#!/usr/bin/env python3
"""count_creates.py - how many files a command's run sees created in a
directory, for tests/e2e/download_stream.sh.

    count_creates.py DIR COMMAND [ARG...]

Watches DIR with inotify (IN_CREATE; the files may be unlinked at once, as
lighttpd's temp files are), runs COMMAND, and once it has exited prints
one line, the number of files created meanwhile ("overflow" when the
kernel's event queue overflowed and the number is unknown), on stdout.  The exit
status is COMMAND's; 2 when DIR cannot be watched (nothing is printed).
COMMAND's own stdout is passed through to stderr, so the count is the only
thing on stdout.
"""
import ctypes
import ctypes.util
import os
import struct
import subprocess
import sys

IN_CREATE = 0x00000100
IN_Q_OVERFLOW = 0x00004000	# events were lost: the count is unknown
IN_NONBLOCK = 0o4000
EVENT_HEAD = struct.Struct('iIII')	# wd, mask, cookie, len (struct inotify_event)


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK)
    if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(sys.argv[1]), IN_CREATE) < 0:
        sys.stderr.write('count_creates: cannot watch %s: %s\n'
                         % (sys.argv[1], os.strerror(ctypes.get_errno())))
        return 2
    status = subprocess.call(sys.argv[2:], stdout=sys.stderr)
    created, lost = 0, False
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            break
        off = 0
        while off < len(data):
            _, mask, _, name_len = EVENT_HEAD.unpack_from(data, off)
            if mask & IN_CREATE:
                created += 1
            lost = lost or bool(mask & IN_Q_OVERFLOW)
            off += EVENT_HEAD.size + name_len
    print('overflow' if lost else created)
    return status


if __name__ == '__main__':
    sys.exit(main())
