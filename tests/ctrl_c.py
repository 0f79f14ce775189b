#!/usr/bin/env python3
"""ctrl_c.py [--lines FILE:N] [--delay S] [--again S] [--limit S] -- CMD ARGS...

Runs CMD on a new pseudo-terminal, as a terminal runs the command line a user typed: CMD is
the session's foreground job, so a Ctrl-C typed there is a SIGINT to its whole process group
(the terminal's own rule), nothing else. Once FILE has N lines (a run's JSONL: the training
is under way) and DELAY more seconds have passed, it types Ctrl-C (0x03); with --again, a
second one S seconds later. Everything CMD wrote to the terminal goes to stdout (without the
terminal's "^C" echo); the exit
status is CMD's (128 + N when a signal N ended it; 124 when it outlived --limit, default
120 s, and was killed).
"""
import os
import pty
import select
import sys
import time


def lines_in(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def main():
    args = sys.argv[1:]
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    wait_file, wait_n, delay, again, limit = None, 0, 0.0, None, 120.0
    i = 0
    while i < len(opts):
        if opts[i] == "--lines":
            wait_file, n = opts[i + 1].rsplit(":", 1)
            wait_n = int(n)
        elif opts[i] == "--delay":
            delay = float(opts[i + 1])
        elif opts[i] == "--again":
            again = float(opts[i + 1])
        elif opts[i] == "--limit":
            limit = float(opts[i + 1])
        else:
            sys.exit("ctrl_c.py: unknown option " + opts[i])
        i += 2
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    start = time.time()
    ready_at = None  # when the wait condition held
    typed = 0
    out = bytearray()
    status = None
    while status is None:
        r, _, _ = select.select([fd], [], [], 0.02)
        if r:
            try:
                out += os.read(fd, 65536)
            except OSError:
                pass
        now = time.time()
        if ready_at is None and (wait_file is None or lines_in(wait_file) >= wait_n):
            ready_at = now
        if ready_at is not None and typed == 0 and now >= ready_at + delay:
            os.write(fd, b"\x03")
            typed, first = 1, now
        elif typed == 1 and again is not None and now >= first + again:
            os.write(fd, b"\x03")
            typed = 2
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif now - start > limit:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            sys.stdout.write(out.decode(errors="replace"))
            sys.exit(124)
    while True:  # what is left on the terminal
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    # The terminal echoes each Ctrl-C as "^C" wherever the cursor is: taken out, so that the
    # lines read as the programs wrote them.
    sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n").replace("^C", ""))
    sys.stdout.write("ctrl_c.py: typed %d Ctrl-C\n" % typed)
    sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()
