#!/usr/bin/env python3
"""Hostile NBD clients that never read their replies, to watch a server's memory.

Opens N connections to a Unix-socket NBD server, negotiates EXPORT (fixed newstyle,
NBD_OPT_EXPORT_NAME), sends 1 MiB READs on each as fast as the server takes them and never
reads a reply, then holds the connections for SECONDS. Meanwhile watch the server's RSS
(`grep VmHWM /proc/PID/status`): it must stay bounded whatever N is (docs/BENCHMARKS.md,
"Clients that stop reading replies").

usage: nbd-stalled-clients.py SOCKET EXPORT N SECONDS
"""
import socket
import struct
import sys
import threading
import time

IHAVEOPT = 0x49484156454F5054
REQUEST = 0x25609513


def connect(path, export):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.recv(18, socket.MSG_WAITALL)  # NBDMAGIC, IHAVEOPT, handshake flags
    s.sendall(struct.pack(">I", 1 | 2))  # fixed newstyle, no zeroes
    s.sendall(struct.pack(">QII", IHAVEOPT, 1, len(export)) + export)
    size, _flags = struct.unpack(">QH", s.recv(10, socket.MSG_WAITALL))
    return s, size


def stall(path, export, hold):
    s, size = connect(path, export)
    s.settimeout(hold)
    try:
        for i in range(1 << 20):
            offset = (i * 65536) % (size - (1 << 20))
            s.sendall(struct.pack(">IHHQQI", REQUEST, 0, 0, i, offset, 1 << 20))
    except OSError:
        pass  # the server stopped reading: its bound is reached
    time.sleep(hold)
    s.close()


def main():
    path, export, n, hold = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), float(sys.argv[4])
    threads = [threading.Thread(target=stall, args=(path, export, hold)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
