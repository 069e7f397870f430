"""What every command of `awele` shares: the one-line user error, the
position argument, Ctrl-C during compiled work, JSON output, and the tables
folder and memory options."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

import click

from .errors import AweleError

if TYPE_CHECKING:
    from .position import Position

EXIT_USER_ERROR = 2


class UserError(click.ClickException):
    """A user mistake reported as one line with exit status 2."""

    exit_code = EXIT_USER_ERROR


def parse_position(text: str | None, moves: str | None = None) -> Position:
    """A Position from notation (canonical or 12 integers) and/or a move record."""
    from .position import Game, Position

    if text is not None and not text.strip():
        raise UserError("the position is empty: write one, or leave it out for the opening")
    try:
        start = Position.from_string(text) if text is not None else Position.initial()
        if moves:
            return Game.parse(moves, start).position
        return start
    except AweleError as error:
        raise UserError(str(error)) from None


def aborted(*_):
    """End the process at once: "aborted", status 130."""
    click.echo("awele: aborted", err=True)
    sys.stderr.flush()
    os._exit(130)


def interruptible(function, *args):
    """function(*args) in a worker thread, so that Ctrl-C stops the command at
    once ("aborted", status 130) even while a compiled kernel runs: a kernel
    does not look at signals, so the main thread waits for it instead and,
    on Ctrl-C, leaves it behind. (Reading tables in the main thread, Ctrl-C
    can land in one of h5py's weakref callbacks, where Python reports it and
    goes on.) Only for work that writes nothing.

    In the main thread, SIGINT gets a handler of its own for the duration,
    which ends the process itself: a KeyboardInterrupt can be swallowed on
    its way (three clean-clone test runs here saw Ctrl-C go unheeded; alone
    it never did), and a SIGINT ignored since the process started (as a
    parent can leave it: Python then installs no handler) is heard too."""
    outcome = {}

    def work():
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # handed to the main thread below
            outcome["error"] = error

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, aborted) if main else None
    try:
        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        try:
            while worker.is_alive():
                worker.join(0.1)
        except KeyboardInterrupt:
            aborted()
    finally:
        if main:
            signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


def first_process() -> bool:
    """Whether this is the first (or only) process the MPI launcher started."""
    if not any(name in os.environ for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")):
        return True  # not launched by mpiexec or srun: no need to load the distributed module
    from . import distributed

    return distributed.launched_rank() == 0


def refuse_empty_directory(context, parameter, value):
    if value is not None and not value.strip():
        raise UserError("--dir needs a folder name, not an empty one")
    return value


def directory_option(function):
    return click.option(
        "--dir",
        "directory",
        type=click.Path(file_okay=False),
        default=None,
        callback=refuse_empty_directory,
        help="Tables folder (default: $AWELE_DATABASES, else the checkout's databases/ or the user data folder).",
    )(function)


def memory_option(function):
    return click.option(
        "--memory",
        default=None,
        metavar="SIZE",
        help="Memory budget, e.g. 20G (default: the available memory less 1 GiB).",
    )(function)


def memory_budget(memory, builds=True):
    """The budget --memory gives (bytes); with `builds`, one that builds no layer is refused here."""
    from . import plan as model

    if memory is None:
        return model.default_budget()
    try:
        budget = model.parse_memory(memory)
    except ValueError as error:
        raise UserError(f"--memory: {error}") from None
    too_small = model.budget_too_small(budget) if builds else None
    if too_small:
        raise UserError(f"--memory {memory}: {too_small}")
    return budget


def layer_ranges(layers):
    """'0..4, 7' for the sorted seed counts [0, 1, 2, 3, 4, 7]."""
    runs: list[list[int]] = []
    for n in layers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{low}..{high}" if high > low else f"{low}" for low, high in runs)
