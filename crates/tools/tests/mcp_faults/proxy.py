#!/usr/bin/env python3
"""A stdio MCP server that is another one behind a fault.

Usage: proxy.py ARMED MODE N -- COMMAND...

Runs COMMAND (a real MCP server) and relays JSON-RPC lines both ways. While the file ARMED
exists, the N-th line the server sends (1 = its answer to `initialize`) meets MODE, and ARMED
is removed, so the server started after it (a reconnection) works:

  stall    nothing more is relayed either way, and the process stays (a hung server)
  die      the server is killed and this process exits before relaying it
  cut      half of the line is relayed, then this process exits (a crash mid-write)
  garbage  a line that is not JSON-RPC (random bytes) is relayed before it, then the rest
"""
import os
import random
import subprocess
import sys
import threading
import time

armed, mode, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])
command = sys.argv[sys.argv.index("--") + 1 :]
fault = os.path.exists(armed)
server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
stalled = threading.Event()


def to_server():
    for line in sys.stdin.buffer:
        if stalled.is_set():
            continue
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()


threading.Thread(target=to_server, daemon=True).start()
out = sys.stdout.buffer
count = 0
for line in server.stdout:
    count += 1
    if fault and count == nth:
        os.remove(armed)
        if mode == "stall":
            stalled.set()
            while True:
                time.sleep(3600)
        if mode == "die":
            server.kill()
            sys.exit(1)
        if mode == "cut":
            out.write(line[: len(line) // 2])
            out.flush()
            server.kill()
            sys.exit(1)
        if mode == "garbage":
            rng = random.Random(nth)
            junk = bytes(rng.randrange(1, 256) for _ in range(40)).replace(b"\n", b" ")
            out.write(junk + b"\n")
    out.write(line)
    out.flush()
server.wait()
