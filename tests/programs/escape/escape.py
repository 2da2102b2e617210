"""A program that tries, as a sliced program could, what the Python-level write guard does not see.

``python escape.py N OUT PID`` counts N loop iterations plus a bit for every escape that succeeded, so a
feature evaluator of the loop reports which ones got through: 1 a file written with io.FileIO, 2 a
SQLite database created, 4 a signal to process PID, 8 a shell started through ctypes, 16 a UDP
socket bound, 32 a process forked through ctypes. OUT is a folder and PID a process outside the evaluation.
"""

import ctypes
import io
import os
import socket
import sqlite3
import sys


def main(argv):
    n, out, outsider = int(argv[0]), argv[1], int(argv[2])
    escaped = 0
    try:
        with io.FileIO(os.path.join(out, "fileio.txt"), "w") as handle:
            handle.write(b"escaped")
        escaped += 1
    except OSError:
        pass
    try:
        connection = sqlite3.connect(os.path.join(out, "escaped.db"))
        connection.execute("create table escaped (x)")
        connection.close()
        escaped += 2
    except sqlite3.Error:
        pass
    try:
        os.kill(outsider, 0)
        escaped += 4
    except OSError:
        pass
    libc = ctypes.CDLL(None)
    if libc.system(("touch " + os.path.join(out, "shell.txt")).encode()) == 0:
        escaped += 8
    try:
        datagram = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        datagram.bind(("127.0.0.1", 0))
        datagram.close()
        escaped += 16
    except OSError:
        pass
    pid = libc.fork()
    if pid == 0:
        libc._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        escaped += 32
    count = 0
    for _ in range(n + escaped):
        count += 1
    print(count)


if __name__ == "__main__":
    main(sys.argv[1:])
