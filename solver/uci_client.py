"""A UCI engine in another process, driven as a GUI drives it.

Used by `awele suite run` (solver/suite.py) and by scripts/match.py: it
starts the command, says ``uci`` and waits for ``uciok``, sends the options,
``ucinewgame`` and ``isready`` before each game or position, reads the
engine's lines in a thread (each with the moment it came), and closes it
with ``quit``, then ``terminate`` and ``kill`` if it does not go.
"""

from __future__ import annotations

import queue
import shlex
import subprocess
import threading
import time
from typing import IO

from .errors import AweleError


class EngineError(AweleError):
    """An engine that cannot be started, or does not answer as UCI asks."""


class UciClient:
    """An engine in another process, driven over UCI (the dialect of Aalina
    and the Aualé GUI) as a GUI drives it: started with ``uci``, its options
    sent as ``setoption``, ``ucinewgame`` and ``isready`` before each game.
    Its output is read in a thread, a line at a time; an engine that exits,
    hangs or says nothing usable is seen, never waited for without end.
    `error`: the exception raised when it cannot start or answer (EngineError,
    or a caller's own)."""

    error: type[Exception] = EngineError

    HANDSHAKE_SECONDS = 30.0
    # An engine answers 'isready' once it is ready, which after setoption can
    # mean reading gigabytes of tables (layers 0..28: about a minute, longer
    # while another engine reads too); an engine that exits is seen at once.
    READY_SECONDS = 600.0

    def __init__(self, spec, command, options=(), grace=2.0, log=None):
        self.spec = spec
        self.log = log
        try:
            self.command = shlex.split(command)
        except ValueError as error:  # an unbalanced quote
            raise self.error(f"engine {spec!r}: cannot read its command line: {error}") from None
        if not self.command:
            raise self.error(f"engine {spec!r}: no command")
        self.options = list(options)
        self.grace = grace
        self.name = None
        self.process: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()  # the engine's lines; None once its output ended
        self.ended = threading.Event()  # set when the engine's output ends
        self.start()

    def start(self):
        """Start the command and shake hands (uci / uciok), then send the options."""
        errors: int | IO[bytes] = subprocess.DEVNULL
        try:
            if self.log is not None:
                errors = open(self.log, "ab")  # noqa: SIM115 (closed below, once the engine holds its copy)
        except OSError as error:
            raise self.error(f"cannot write the engine log {self.log}: {error.strerror or error}") from None
        try:
            # An engine's output is decoded with what is not UTF-8 replaced: a
            # stray byte is the engine's fault, never the match's end.
            self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=errors, text=True, bufsize=1, encoding="utf-8",
                                            errors="replace")
        except (OSError, ValueError) as error:
            raise self.error(f"engine {self.spec!r} cannot start: {error}") from None
        finally:
            if not isinstance(errors, int):
                errors.close()  # the engine holds its own copy
        self.lines = queue.Queue()
        self.ended = threading.Event()  # set when the engine's output ends
        threading.Thread(target=self._read, args=(self.process.stdout, self.lines, self.ended), daemon=True).start()
        self.send("uci")
        if self._wait_for("uciok", self.HANDSHAKE_SECONDS) is None:
            self.close()
            raise self.error(f"engine {self.spec!r} did not answer 'uci' with 'uciok' "
                             f"within {self.HANDSHAKE_SECONDS:g} s")
        for option in self.options:
            name, _, value = option.partition("=")
            self.send(f"setoption name {name.strip()} value {value.strip()}")

    @staticmethod
    def _read(stream, lines, ended):
        for line in stream:
            lines.put(line.strip())
        ended.set()
        lines.put(None)  # end of output: the engine exited

    def send(self, command):
        """Write one line to the engine; False when it cannot be written (it has gone)."""
        try:
            assert self.process is not None and self.process.stdin is not None, "the engine was started"
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def _wait_for(self, word, seconds):
        """The first line starting with `word` within `seconds`; None on timeout or exit."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                self.lines.put(None)  # stays at the end for later waits
                return None
            if line.split(maxsplit=1)[:1] == [word]:
                return line
            if line.startswith("id name "):
                self.name = line[len("id name "):]

    def alive(self):
        return self.process is not None and self.process.poll() is None and not self.ended.is_set()

    def new_game(self):
        if not self.alive():
            self.close()
            self.start()
        self.send("ucinewgame")
        self.send("isready")
        if self._wait_for("readyok", self.READY_SECONDS) is None:
            raise self.error(f"engine {self.spec!r} did not answer 'isready' within {self.READY_SECONDS:g} s")

    def _drain(self):
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self.lines.put(None)
                return

    def close(self):
        if self.process is None:
            return
        if self.process.poll() is None:
            self.send("quit")
            try:
                self.process.wait(2)
            except subprocess.TimeoutExpired:
                self.process.terminate()
                try:
                    self.process.wait(2)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        self.process = None


__all__ = ["EngineError", "UciClient"]
