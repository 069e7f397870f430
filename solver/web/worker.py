"""The oracle's slow work in a process of its own: searches, lines, perfect
play that needs the tables' progress ranking, game analysis.

Why a process and not a thread: the search kernel holds the GIL for a whole
iteration, and a line in a large won endgame can take minutes (the progress
ranking reads one table chunk per position). In a child process neither
stalls the table lookups the server answers itself, and a job that runs past
its time limit is stopped by ending the process, which a thread cannot be;
the next job starts a fresh one.

The child opens its own Tablebase and a Searcher on the same folder (which
reads the smaller tables whole, up to the Searcher's default budget, never a
layer of 25 seeds or more) and answers one job at a time.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from ..engine import line_report, parse_game, search_report, table_message
from ..errors import AweleError, MissingTableError, TableError

if TYPE_CHECKING:  # the child imports them when it starts; the server never does
    from ..engine import Engine

START_TIMEOUT = 300.0  # seconds a fresh child may take to open its tables (layers to 20: about 10 s)


class JobError(Exception):
    """A job the child refused: a user error (`user` True, a 400) or a
    failure of the tables or of the child itself (a 503)."""

    def __init__(self, message: str, user: bool = False, status: int = 503) -> None:
        super().__init__(message)
        self.user = user
        self.status = status  # for a failure: 500 for a damaged table, 503 otherwise


class JobTimeout(Exception):
    """A job ran past its time limit; the child was stopped."""


def _run_job(engine: Engine, job: str, args: dict[str, Any]) -> Any:
    if job == "search":
        game = parse_game(args["position"], args["moves"])
        return search_report(engine, game, args["time"], args["cycles"], args["move_values"])
    if job == "line":
        game = parse_game(args["position"], args["moves"])
        return line_report(engine.tablebase, game.position, args["max_plies"])
    if job == "engine":
        game = parse_game(args["position"], args["moves"])
        return {"position": str(game.position), **engine.move(game, time=args["time"]).as_dict()}
    if job == "analyse":
        from ..analysis import analyse

        start = parse_game(args["position"], None).start
        return analyse(args["record"], engine.tablebase, engine.searcher, time_per_ply=args["time_per_ply"],
                       start=start).as_dict()
    raise ValueError(f"unknown job {job!r}")


def _main(connection: Connection, directory: str) -> None:
    """The child: open the tables, say ready, then answer jobs until the pipe closes."""
    from ..engine import Engine
    from ..probe import Tablebase
    from ..search import DEFAULT_TABLE_BYTES, Searcher

    try:
        tablebase = Tablebase(directory)
        # The smaller layers, read before "ready" so that a damaged one is
        # known (and left out) when the server first answers /api/info.
        searcher = Searcher(tablebase, table_bytes=DEFAULT_TABLE_BYTES)
    except TableError as error:
        connection.send(("failed", f"the search process cannot open the tables: {table_message(error)}"))
        return
    except Exception as error:  # reported to the server, which answers 503 with it
        connection.send(("failed", f"the search process cannot open the tables: {type(error).__name__}"))
        return
    engine = Engine(tablebase, searcher)

    def left_out():
        """The damaged layers the Searcher leaves out, told as the clients are told."""
        return {n: table_message(e) if isinstance(e, TableError) else
                f"layer {n} of this server's tables cannot be read: the server must rebuild it"
                for n, e in dict(searcher.left_out).items()}

    connection.send(("ready", left_out()))
    while True:
        try:
            job, args = connection.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("ok", _run_job(engine, job, args))
        except MissingTableError as error:
            reply = ("user", table_message(error))
        except TableError as error:
            reply = ("table", table_message(error))
        except AweleError as error:
            reply = ("user" if isinstance(error, ValueError) else "failed", str(error))
        except Exception as error:  # a bug or damaged data: the server answers 503 with it
            reply = ("failed", f"{type(error).__name__}: {error}")
        # With the layers left out so far: a search can find one damaged after "ready".
        connection.send((*reply, left_out()))


class Worker:
    """The child process (`python -m solver.web.worker`, so that nothing of
    the server's main module runs again in it) and a socket pair to it; one
    job at a time.

    `call` starts the child when there is none (waiting up to START_TIMEOUT
    for it to open its tables), sends the job and waits `timeout` seconds
    for the answer; past that it ends the child and raises JobTimeout.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = str(directory)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self._ready = False
        self.left_out: dict[int, str] = {}  # {layer: why}: damaged layers the child's search does without

    def start(self) -> None:
        """Start the child now (in the background: it opens its tables while
        the server answers table lookups)."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> Connection:
        """The connection to the running child, started first if there is none."""
        if self._process is not None and self._process.poll() is None and self._connection is not None:
            return self._connection
        self._stop()
        ours, theirs = socket.socketpair()
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, environment.get("PYTHONPATH")]))
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", "solver.web.worker", str(theirs.fileno()), self.directory],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=environment,
                start_new_session=True,  # Ctrl-C in the terminal is the server's to handle; it ends us
            )
        finally:
            theirs.close()
        self._process, self._connection = process, Connection(ours.detach())
        self._ready = False
        return self._connection

    def _wait_ready(self, connection: Connection) -> None:
        if self._ready:
            return
        if not connection.poll(START_TIMEOUT):
            self._stop()
            raise JobError("the search process did not start in time")
        try:
            status, message = connection.recv()
        except (EOFError, OSError):
            self._stop()
            raise JobError("the search process stopped while opening the tables") from None
        if status != "ready":
            self._stop()
            raise JobError(message)
        self.left_out = dict(message or {})
        self._ready = True

    def call(self, job: str, args: dict[str, Any], timeout: float) -> Any:
        """Run `job` with `args` in the child; its result, or JobError / JobTimeout."""
        with self._lock:
            connection = self._ensure_started()
            self._wait_ready(connection)
            try:
                connection.send((job, args))
                answered = connection.poll(timeout)
                if answered:
                    status, payload, left_out = connection.recv()
                    self.left_out = dict(left_out)
            except (EOFError, OSError, BrokenPipeError):
                self._stop()
                raise JobError("the search process stopped unexpectedly; "
                               "it is restarted for the next request") from None
            if not answered:
                self._stop()
                raise JobTimeout(f"took longer than {timeout:g} s and was stopped")
        if status == "ok":
            return payload
        raise JobError(payload, user=status == "user", status=500 if status == "table" else 503)

    def left_out_of_search(self, timeout: float = START_TIMEOUT) -> dict[int, str]:
        """{layer: why} of the damaged layers the child's search does without,
        known once it has read its tables: a child not ready yet is started
        and waited for (up to `timeout` seconds), without waiting for a job
        another request runs. Empty when the child cannot start."""
        deadline = time.monotonic() + timeout
        while not self._ready and time.monotonic() < deadline:
            if not self._lock.acquire(timeout=0.05):
                continue  # a call holds the child: it makes it ready first, then runs its job
            try:
                if not self._ready:
                    self._wait_ready(self._ensure_started())
            except JobError:
                break
            finally:
                self._lock.release()
        return dict(self.left_out)

    def _stop(self) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = self._connection = None
        self._ready = False

    def close(self) -> None:
        """End the child."""
        with self._lock:
            self._stop()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _main(Connection(int(sys.argv[1])), sys.argv[2])
