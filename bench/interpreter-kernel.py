#!/usr/bin/python3
"""The baselines of bench/interpreter.sh, measured inside the sandbox (bench/interpreter.mjs uploads
and runs this with sandbox.commands.run): a python3 kernel of our own, started and driven with
jupyter_client (installed with python3-ipykernel), with no Cove code on the path.

  kernel round trip  RUNS timed `1+1` executions after WARMUP untimed ones: execute_request sent ->
                     shell execute_reply received, and -> both the reply and iopub `status: idle`
                     received (what a server that forwards every output must wait for)
  kernel start       STARTS times start_new_kernel(): spawn + the kernel_info handshake
  node start         STARTS times `node -e 0` (the process floor of a javascript context)

Usage: interpreter-kernel.py RUNS WARMUP STARTS   Prints one JSON object (milliseconds).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import zmq
from jupyter_client.manager import start_new_kernel


def ms(t0, t1):
    return (t1 - t0) * 1000.0


def start_kernel():
    # Kernel stdout/stderr (the banner, debugpy warnings) must not mix with our JSON line.
    devnull = open(os.devnull, "wb")
    t0 = time.perf_counter()
    km, kc = start_new_kernel(kernel_name="python3", stdout=devnull, stderr=devnull, startup_timeout=60)
    return km, kc, ms(t0, time.perf_counter()), devnull


def stop_kernel(km, kc, devnull):
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    devnull.close()


def round_trip(kc, poller, shell, iopub):
    """One `1+1`: (ms to execute_reply, ms to reply and idle both), timed when each arrives."""
    t0 = time.perf_counter()
    msg_id = kc.execute("1+1")
    t_reply = t_idle = None
    while t_reply is None or t_idle is None:
        ready = dict(poller.poll(30_000))
        if not ready:
            raise RuntimeError("no kernel message within 30 s")
        now = time.perf_counter()
        if shell in ready:
            msg = kc.get_shell_msg(timeout=0)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_reply":
                if msg["content"].get("status") != "ok":
                    raise RuntimeError(f"execute_reply status {msg['content'].get('status')}")
                t_reply = now
        if iopub in ready:
            msg = kc.get_iopub_msg(timeout=0)
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                    and msg["content"].get("execution_state") == "idle"):
                t_idle = now
    return ms(t0, t_reply), ms(t0, max(t_reply, t_idle))


def main():
    if len(sys.argv) != 4 or not all(a.isdigit() and int(a) > 0 for a in sys.argv[1:]):
        sys.exit("usage: interpreter-kernel.py RUNS WARMUP STARTS (positive integers)")
    runs, warmup, starts = (int(a) for a in sys.argv[1:])
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

    km, kc, _, devnull = start_kernel()
    try:
        shell, iopub = kc.shell_channel.socket, kc.iopub_channel.socket
        poller = zmq.Poller()
        poller.register(shell, zmq.POLLIN)
        poller.register(iopub, zmq.POLLIN)
        for _ in range(warmup):
            round_trip(kc, poller, shell, iopub)
        reply, done = [], []
        for _ in range(runs):
            r, d = round_trip(kc, poller, shell, iopub)
            reply.append(r)
            done.append(d)
    finally:
        stop_kernel(km, kc, devnull)

    kernel_start = []
    for _ in range(starts):
        km, kc, t, devnull = start_kernel()
        kernel_start.append(t)
        stop_kernel(km, kc, devnull)

    node_start = []
    node = shutil.which("node")
    if node:
        for _ in range(starts):
            t0 = time.perf_counter()
            subprocess.run([node, "-e", "0"], check=True)
            node_start.append(ms(t0, time.perf_counter()))

    r3 = lambda xs: [round(x, 3) for x in xs]
    print(json.dumps({
        "runs": runs,
        "reply_p50_ms": round(statistics.median(reply), 3),
        "done_p50_ms": round(statistics.median(done), 3),
        "reply_all_ms": r3(reply),
        "kernel_start_p50_ms": round(statistics.median(kernel_start), 1),
        "kernel_start_all_ms": r3(kernel_start),
        "node_start_p50_ms": round(statistics.median(node_start), 1) if node_start else None,
    }))


if __name__ == "__main__":
    main()
