"""The child side of a local service worker: `python -m cuda_agent.bench.worker_main FD`.

Started by `LocalWorker` in a fresh interpreter whose environment already pins its GPU
(CUDA_VISIBLE_DEVICES), so nothing here or in torch sees another device. It owns one
Environment and answers `(method, args)` requests on the connection FD, one at a time, until
the parent closes it.
"""

from __future__ import annotations

import os
import sys
import traceback
from multiprocessing.connection import Connection


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
    fd = int(sys.argv[1])
    os.set_inheritable(fd, False)  # processes this worker starts must not hold its connection
    serve(Connection(fd))
