"""The child side of a local service worker: `python -m cuda_agent.bench.worker_main FD`.

Started by `LocalWorker` in a fresh interpreter whose environment already pins its GPU
(CUDA_VISIBLE_DEVICES), so nothing here or in torch sees another device. It owns one
Environment and answers `(method, args)` requests on the connection FD, one at a time, until
the parent closes it, or until the parent is gone: a bench killed with -9 cannot close it, and
the worker would otherwise finish its build or evaluation first.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection

WATCH_S = 0.5  # how often the worker looks for its parent


def watch_parent(parent: int) -> threading.Thread:
    """Kill this worker's process group (itself, its compilers and candidates: it leads the
    group) once its parent process `parent` is gone."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_S)
        os.killpg(0, signal.SIGKILL)

    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread


def serve(conn: Connection) -> None:
    from cuda_agent.bench import calls
    from cuda_agent.sandbox import Environment

    env_config = conn.recv()
    with Environment(env_config) as env:
        env.warm_up()  # the precompiled header and the fork server, while the first job arrives
        conn.send(("ready", os.getpid()))
        while True:
            try:
                method, args = conn.recv()
            except EOFError:
                return
            try:
                reply = ("ok", calls.dispatch(env, method, args))
            except Exception:  # reported to the parent as this call's failure; the worker lives on
                reply = ("error", traceback.format_exc(limit=8))
            conn.send(reply)


if __name__ == "__main__":
    watch_parent(int(sys.argv[2]))
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # processes this worker starts must not hold its connection
    serve(Connection(fd))
