"""The `awele` command line: a thin click layer over the Python API.

User errors (bad positions, illegal moves, missing tables) print one line on
stderr and exit with status 2; no traceback reaches the user.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import click

from .cli_common import (
    EXIT_USER_ERROR,
    UserError,
    directory_option,
    emit_json,
    first_process,
    parse_position,
)
from .cli_common import interruptible as _interruptible  # one name a test can replace for every command here
from .cli_common import layer_ranges as _layer_ranges
from .cli_suite import suite_command
from .cli_tables import build, info, plan, verify
from .errors import AweleError
from .limits import MAX_PERFT_DEPTH, MAX_PLY
from .report import EndReason, Outcome, Rule, true_rule_may_change
from .version import __version__


class AweleGroup(click.Group):
    """A click group whose errors are one line on stderr with exit status 2,
    whose help gives each command's first paragraph whole, and whose aliases
    (`query` for `best`) are shown beside their command, not as commands."""

    aliases: ClassVar[dict[str, str]] = {}  # alias: the command it names

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click cuts a summary at its first word ending in "." ("(e.g.") or at a
        # width; the first paragraph whole, wrapped, says what a command does.
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            also = sorted(alias for alias, target in self.aliases.items() if target == name)
            label = name + (f" ({', '.join(also)})" if also else "")
            summary = command.short_help or (command.help or "").split("\n\n")[0]
            rows.append((label, " ".join(summary.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = "awele", complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            result = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False,
                                  **extra)
        except click.exceptions.Abort:
            click.echo("awele: aborted", err=True)
            sys.exit(130)
        except click.ClickException as error:
            if not first_process():  # under mpiexec every process meets a bad option alike: one says so
                sys.exit(EXIT_USER_ERROR)
            click.echo(f"awele: error: {error.format_message()}", err=True)
            sys.exit(EXIT_USER_ERROR)
        except AweleError as error:
            click.echo(f"awele: error: {error}", err=True)
            sys.exit(EXIT_USER_ERROR)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=AweleGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="awele")
def cli() -> None:
    """Exact solver and endgame tables for Awele (Oware, Abapa rules).

    Positions are written A-B-C-D-E-F/a-b-c-d-e-f SIDE S:N (South's houses
    A..F, North's a..f, both in sowing order; side to move; seeds captured by
    South and North), or as 12 integers.
    """


for _command in (build, plan, info, verify):  # the build side's commands (solver.cli_tables)
    cli.add_command(_command)


@cli.command()
@click.argument("position", required=False)
@click.option("--moves", help='Moves played from POSITION (or the opening), e.g. "1. F b 2. D a".')
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(position: str | None, moves: str | None, as_json: bool) -> None:
    """Show a position: diagram, notation, legal moves."""
    pos = parse_position(position, moves)
    if as_json:
        emit_json(
            {
                "position": str(pos),
                "houses": list(pos.houses),
                "to_move": pos.to_move,
                "captured": list(pos.captured),
                "seeds": pos.seeds,
                "legal_moves": pos.legal_moves(),
                "over": pos.is_over(),
                "result": pos.result(),
            }
        )
        return
    click.echo(pos.diagram())
    click.echo(f"position: {pos}")
    if pos.is_over():
        result = pos.result()
        assert result is not None, "the game is over"
        south, north = result
        click.echo(f"game over ({pos.terminal_rule()}): South {south}, North {north}")
    else:
        click.echo(f"legal moves: {' '.join(pos.legal_moves())}")


@cli.command("perft")
@click.argument("position")
@click.argument("depth", type=click.IntRange(0, MAX_PERFT_DEPTH))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def perft_command(position: str, depth: int, as_json: bool) -> None:
    """Count the leaves DEPTH plies below POSITION ('initial' for the opening)."""
    from .position import Position, perft

    pos = Position.initial() if position.lower() in ("initial", "start", "opening") else parse_position(position)
    started = time.perf_counter()
    leaves = _interruptible(perft, pos, depth)
    seconds = time.perf_counter() - started
    if as_json:
        emit_json({"position": str(pos), "depth": depth, "leaves": leaves, "seconds": seconds})
    else:
        click.echo(leaves)


EMBEDDED_SEEDS = 16  # `best` builds missing layers up to this many seeds by itself


def _open_tablebase(directory, position, quiet=False):
    """A Tablebase for `position`, building small missing layers on the way.

    A build says what it builds and where, on stderr, whether or not stderr
    is a terminal (it writes files the user did not ask for by name), before
    its progress bar starts (so the bar does not overwrite it); `quiet` only
    leaves the bar out."""
    from . import build as builder
    from . import index, retrograde, tables
    from .probe import Tablebase

    directory = directory or tables.default_directory()
    tablebase = Tablebase(directory)
    needed = position.seeds
    missing = [n for n in range(needed + 1) if not tablebase.has_layer(n)]
    if missing and needed <= EMBEDDED_SEEDS:
        from tqdm import tqdm

        # A folder that cannot take the tables fails in one line, before the notice.
        builder.prepare_directory(directory)
        positions = sum(index.layer_size(n) for n in missing)
        compiling = "" if retrograde.kernels_cached() else (
            f"; compiling the builder's kernels first, once (about {retrograde.COMPILE_SECONDS} s)")
        click.echo(f"building the missing tables, layer{'s' if len(missing) > 1 else ''} {_layer_ranges(missing)} "
                   f"({positions:,} positions), "
                   f"in {directory}, once: later answers read them{compiling}", err=True)
        bar = tqdm(total=needed + 1, desc="tables", unit="layer", disable=quiet or not sys.stderr.isatty(),
                   file=sys.stderr)
        builder.build(needed, directory, report=lambda row: bar.update(1))
        bar.close()
    return tablebase


def _score_text(scores):
    """'South 25 - North 23 (South wins)' for final (South, North) totals."""
    from .report import Outcome

    return Outcome(float(scores[0]), float(scores[1])).text()


def _side_name(position):
    return "South" if position.to_move == "S" else "North"


def _echo_moves(moves, show_exact):
    """Every move's line: * for the best, its value, exact or not, its capture."""
    from .report import best_value

    best = best_value(moves)
    for m in moves:
        mark = "*" if m.value is not None and m.value == best else " "
        value = "?" if m.value is None else f"{m.value:+d}"
        kind = (" exact" if m.exact else " estimate") if show_exact else ""
        capture = f"  captures {m.captured}" if m.captured else ""
        if m.distance is not None and not m.captured:
            capture += f"  capture in {m.distance} pl{'y' if m.distance == 1 else 'ies'}"
        click.echo(f"  {mark} {m.move}  {value}{kind}{capture}")


def _search_options(default_time):
    """--depth/--time/--nodes/--tables/--hash/--threads, shared by search and best."""

    def decorate(function):
        for option in reversed(
            [
                click.option("--depth", type=click.IntRange(1, MAX_PLY), default=None,
                             help="Search this many plies (iterative deepening up to it)."),
                click.option("--time", "seconds", type=Seconds(), default=None,
                             help=f"Seconds to search (default {default_time:g} unless --depth or --nodes; "
                                  "0: until the value is exact)."),
                click.option("--nodes", type=click.IntRange(min=1), default=None, help="Stop after this many nodes."),
                click.option("--tables", "max_tables", type=click.IntRange(0, 48), default=None,
                             help="Read tables up to this many seeds into memory (default: as many as fit in a "
                                  "quarter of the memory available, read while the search runs)."),
                click.option("--hash", "hash_mb", type=click.IntRange(1, 65536), default=64, show_default=True,
                             help="Transposition table size in MiB."),
                _threads_option,
            ]
        ):
            function = option(function)
        return function

    return decorate


_threads_option = click.option("--threads", type=click.IntRange(min=1), default=None,
                               help="Search threads (default: every core; --nodes searches on one).")


class Seconds(click.ParamType):
    """A number of seconds >= 0, finite; a nonzero number so small that it
    reads as 0.0 (1e-400) is refused rather than taken for 0 (no limit)."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            seconds = float(value)
        except ValueError:
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds < 0:
            self.fail(f"{value!r} is not a finite number of seconds >= 0", param, ctx)
        if seconds == 0 and any(digit in "123456789" for digit in str(value).lower().split("e")[0]):
            self.fail(f"{value} seconds is too small to tell from 0 (0 means no time limit)", param, ctx)
        return seconds


def _limits(depth, seconds, nodes, default_time):
    """(depth, time, nodes) for Searcher.search from the command-line options."""
    if depth is not None and seconds is not None:
        raise UserError("give --depth or --time, not both")
    if seconds is not None and not math.isfinite(seconds):
        raise UserError(f"--time must be a finite number of seconds, got {seconds}")
    if seconds is None and depth is None and nodes is None:
        seconds = default_time
    return depth, (seconds or None), nodes


SEARCH_COMPILE_SECONDS = 20  # numba's first compilation of the search's kernels on 2 cores, measured


def search_kernels_cached() -> bool:
    """Whether numba's cache holds the search kernel (else the first Searcher compiles it)."""
    from . import alphabeta

    # Numba's own idea of where alphabeta.py's kernels are cached ($NUMBA_CACHE_DIR or __pycache__).
    folder = getattr(getattr(alphabeta.tt_probe, "_cache", None), "_cache_path", None) or os.path.join(
        os.path.dirname(os.path.abspath(alphabeta.__file__)), "__pycache__")
    try:
        return any(name.startswith("alphabeta.alpha_beta-") and name.endswith(".nbi") for name in os.listdir(folder))
    except OSError:
        return False


def _searcher(directory, max_tables, hash_mb, threads=None, quiet=False):
    from . import tables
    from .search import Searcher

    if not quiet and not search_kernels_cached():
        click.echo(f"compiling the search's kernels, once (about {SEARCH_COMPILE_SECONDS} s; later searches start "
                   "at once)", err=True)
    return Searcher(directory or tables.default_directory(), hash_mb=hash_mb, max_table_seeds=max_tables,
                    threads=threads)


def _search_dict(result):
    data = result.as_dict()
    data["to_move"] = result.position.to_move
    data["seeds"] = result.position.seeds
    return data


def _parse_game(position, moves):
    """The Game to search: POSITION (or the opening) with MOVES played, or the position alone."""
    from .position import Game

    start = parse_position(position)
    if not moves:
        return start
    try:
        return Game.parse(moves, start)
    except AweleError as error:
        raise UserError(str(error)) from None


def _game_of(position, moves):
    """The Game of POSITION (or the opening) with MOVES played from it."""
    from .position import Game

    subject = _parse_game(position, moves)
    return subject if isinstance(subject, Game) else Game(subject)


def _report_depth(done, value, exact, nodes_so_far, elapsed, line=None):
    """One line per finished iteration on stderr, as engines print "info" lines
    (the search passes the iteration's principal line too; the every-move
    search does not)."""
    rate = nodes_so_far / elapsed / 1e6 if elapsed > 0 else 0.0
    click.echo(f"depth {done:3d}  value {value:+3d}{' exact' if exact else ''}  nodes {nodes_so_far:,}  "
               f"{elapsed:.2f} s  {rate:.1f} M nodes/s" + (f"  line {line}" if line else ""), err=True)


def _rule_text(rule):
    """Which rule a value holds under, in Rule's words."""
    return f"holds under {Rule.parse(rule).describe()}"


def _echo_answer_head(pos, side, answer, kind, cycles, rule):
    """The board, the best move, its value with how it was found and its rule,
    and proven bounds where the value is not exact: the head `awele search`
    and `awele best` above the tables share (`answer`: a SearchResult or a MoveAnswer)."""
    click.echo(pos.diagram())
    click.echo(f"position: {pos}")
    click.echo(f"best move: {answer.move}")
    value = "?" if answer.value is None else f"{answer.value:+d}"
    click.echo(f"value for {side} (to move): {value} ({kind}; repetition: {cycles}; {_rule_text(rule)})")
    if not answer.exact and answer.lower is not None:
        click.echo(f"proven bounds: {answer.lower:+d} <= value <= {answer.upper:+d}")


def _echo_search(result):
    pos = result.position
    side = "South" if pos.to_move == "S" else "North"
    kind = "exact" if result.exact else f"estimate at depth {result.depth}"
    if result.source == "table":
        how = "from the tables"
    elif result.source == "component":
        how = f"solved {result.component_positions:,} positions reachable without a capture, then searched"
    else:
        how = f"searched to depth {result.depth}"
    _echo_answer_head(pos, side, result, kind, result.cycles, result.rule)
    click.echo(f"{how}: {result.nodes:,} nodes in {result.seconds:.2f} s ({result.nps / 1e6:.1f} M nodes/s)")
    if result.line:
        click.echo(f"line: {' '.join(result.line)}")


@cli.command(name="search")
@click.argument("position", required=False)
@click.option("--moves", help="Moves played from POSITION (or the opening); their positions count for repetitions.")
@_search_options(default_time=10)
@click.option("--cycles", type=click.Choice(["own", "split"]), default="own", show_default=True,
              help=f"Repetition: own = {Rule.TRUE.describe(long=True)}; split = {Rule.SPLIT.describe()}.")
@click.option("--bounds", is_flag=True,
              help="When the value is not exact, also prove a lower and an upper bound (about two more iterations).")
@directory_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def search_command(position: str | None, moves: str | None, depth: int | None, seconds: float | None, nodes: int | None,
                   max_tables: int | None, hash_mb: int, threads: int | None, cycles: str, bounds: bool,
                   directory: str | None, as_json: bool) -> None:
    """Alpha-beta search of POSITION above the tables in memory.

    Stops at the limits or as soon as the value is exact. Tables of smaller
    layers make the nodes that reach them exact; with --cycles split and
    every capture landing in a table, the value is the table's.
    """
    depth, seconds, nodes = _limits(depth, seconds, nodes, 10)
    subject = _parse_game(position, moves)
    from .engine import Engine

    engine = Engine.over(_searcher(directory, max_tables, hash_mb, threads, quiet=as_json))
    result = _interruptible(lambda: engine.search(subject, depth=depth, time=seconds, nodes=nodes, cycles=cycles,
                                                  bounds=bounds, progress=None if as_json else _report_depth))
    if as_json:
        emit_json(_search_dict(result))
    else:
        _echo_search(result)


@cli.command(name="best")
@click.argument("position", required=False)
@click.option("--moves", help='Moves played from POSITION (or the opening), e.g. "1. F b 2. D a".')
@directory_option
@_search_options(default_time=10)
@click.option("--cycles", type=click.Choice(["own", "split"]), default="own", show_default=True,
              help=f"Above the tables, repetition: own = {Rule.TRUE.describe()} (as `awele search`); "
                   f"split = {Rule.SPLIT.describe()}.")
@click.option("--bounds", is_flag=True, help="Above the tables, prove bounds on an inexact value (as `awele search`).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def best_command(position: str | None, moves: str | None, directory: str | None, depth: int | None,
                 seconds: float | None, nodes: int | None, max_tables: int | None, hash_mb: int,
                 threads: int | None, cycles: str, bounds: bool, as_json: bool) -> None:
    """The value of POSITION and of every legal move; the best ones marked.

    Under the game's own repetition rule by default, over the moves played:
    from the tables where they hold the position, with the true rule's
    graph proving, within the time, the values that rule may change (one
    it cannot settle is shown under the tables' convention, and said to
    be). Above the tables it searches instead, with the same progress lines
    as `awele search`: one search values every move (the position's value is
    its best move's), and says which values are exact.
    """
    pos = parse_position(position, moves)
    if pos.is_over():
        scores = pos.result()
        assert scores is not None, "the game is over"
        if as_json:
            emit_json({"position": str(pos), "over": True, "reason": str(pos.terminal_rule()), "result": list(scores)})
        else:
            click.echo(pos.diagram())
            click.echo(f"game over ({pos.terminal_rule()}): {_score_text(scores)}")
        return
    depth, seconds, nodes = _limits(depth, seconds, nodes, 10)
    game = _game_of(position, moves)
    with _open_tablebase(directory, pos, quiet=as_json) as tablebase:
        from .engine import Engine

        engine = Engine(tablebase, lambda: _searcher(tablebase.directory, max_tables, hash_mb, threads, quiet=as_json))
        try:
            answer = _interruptible(lambda: engine.position(game, time=seconds, depth=depth, nodes=nodes,
                                                            cycles=cycles, bounds=bounds,
                                                            progress=None if as_json else _report_depth))
        finally:
            if engine.made_searcher is not None:
                engine.made_searcher.close()
    if as_json:
        data = answer.as_dict()
        data["cycles"] = cycles
        emit_json(data)
    elif answer.source == "table":
        _echo_table_answer(pos, answer)
    else:
        _echo_searched_answer(pos, answer, cycles)


def _echo_table_answer(pos, answer):
    """`awele best` from the tables: the value, what perfect play ends with, under which rule, every move."""
    value = answer.value
    side = _side_name(pos)
    click.echo(pos.diagram())
    click.echo(f"position: {pos}")
    # A value under the tables' convention says so on the next line, where it may matter.
    rule = f" (exact, under {Rule.TRUE.describe()})" if answer.rule is Rule.TRUE else ""
    click.echo(f"value for {side} (to move): {value:+d} of the {pos.seeds} seeds on the board{rule}")
    if answer.rule is Rule.SPLIT and true_rule_may_change(value, pos.seeds):
        # The value may rest on endless play, which the tables split evenly and the game does not.
        click.echo(f"perfect play ends: {answer.outcome.text(half_seeds_note=False)} by {Rule.SPLIT.describe()}; "
                   "the game's repetition rule was not proven within the time")
    else:
        click.echo(f"perfect play ends: {answer.outcome.text()}")
    if answer.distance is not None:
        click.echo(f"next capture (or end) in {answer.distance} pl{'y' if answer.distance == 1 else 'ies'}, "
                   f"{'converting as fast' if value > 0 else 'holding out as long'} as {side} can, the value kept")
    _echo_moves(answer.moves, show_exact=False)
    chosen = next(m for m in answer.moves if m.move == answer.move)
    if chosen.repeats and chosen.outcome is not None:
        click.echo(f"perfect play here: {chosen.move}, which repeats a position of the game: "
                   f"{chosen.outcome.text()} by the true rule")


def _echo_searched_answer(pos, answer, cycles):
    """`awele best` above the tables: as `awele search` says it, then every move from the same search."""
    side = _side_name(pos)
    kind = "exact" if answer.exact else f"estimate at depth {answer.depth}"
    _echo_answer_head(pos, side, answer, kind, cycles, answer.rule.value)
    how = (f"searched to depth {answer.depth}" if answer.depth else
           "proven by the true rule's graph of the positions reachable")
    click.echo(f"{how}: {answer.nodes:,} nodes in {answer.seconds:.2f} s")
    if answer.line:
        click.echo(f"line: {' '.join(answer.line)}")
    click.echo("every move, from the same search:")
    _echo_moves(answer.moves, show_exact=True)


AweleGroup.aliases["query"] = "best"


@cli.command()
@click.argument("position", required=False)
@click.option("--moves", help="Moves played from POSITION (or the opening).")
@click.option("--max-plies", type=click.IntRange(min=1), default=200, show_default=True)
@directory_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def line(position: str | None, moves: str | None, max_plies: int, directory: str | None, as_json: bool) -> None:
    """The perfect-play line from POSITION, move by move, and why it ends.

    The side ahead converts as fast as it can and the side behind holds out
    as long as it can (distance to conversion): a line from a position whose
    value is not 0 makes its next capture, or ends, in exactly the distance
    shown."""
    pos = parse_position(position, moves)
    if pos.is_over():
        scores = pos.result()
        assert scores is not None, "the game is over"
        if as_json:
            emit_json({"position": str(pos), "over": True, "end": str(pos.terminal_rule()), "value": None,
                       "moves": [], "captures": [], "result": list(scores), "predicted_result": list(scores)})
        else:
            click.echo(f"position: {pos}   game over ({pos.terminal_rule()}): {_score_text(scores)}")
        return
    with _open_tablebase(directory, pos, quiet=as_json) as tablebase:
        result = _interruptible(lambda: tablebase.line(pos, max_plies=max_plies))
    predicted = Outcome.predicted(pos, result.value)
    if as_json:
        emit_json(
            {
                "position": str(pos),
                "over": False,
                "value": result.value,
                "moves": result.moves,
                "captures": result.captures,
                "end": str(result.end_reason),
                "result": list(result.result) if result.result else None,
                "predicted_result": predicted.scores(),
                "distance": result.distance,
                "layers_without_distances": result.layers_without_distances,
            }
        )
        return
    converts = "" if result.distance is None else \
        f", next capture (or end) in {result.distance} pl{'y' if result.distance == 1 else 'ies'}"
    click.echo(f"position: {pos}   value {result.value:+d}{converts}")
    side = pos.to_move
    for number, (move, captured) in enumerate(zip(result.moves, result.captures), start=1):
        who = "South" if side == "S" else "North"
        extra = f"  captures {captured}" if captured else ""
        click.echo(f"{number:4d}. {who:5s} {move}{extra}")
        side = "N" if side == "S" else "S"
    ending = f"ends: {result.end_reason}" + (f"; {_score_text(result.result)}" if result.result else "")
    if result.end_reason == EndReason.REPETITION and result.result and tuple(result.result) != predicted.totals:
        ending += (f"; not the {predicted.text().split(' (')[0]} the value {result.value:+d} predicts: "
                   "the tables score endless play as an even split, the true rule gives each side its own seeds")
    click.echo(ending)
    if result.layers_without_distances:
        from .tables import build_command

        layers = ", ".join(str(n) for n in result.layers_without_distances)
        click.echo(f"layers {layers} hold no distances: there the winner plays toward a capture by a slower ranking "
                   f"(`{build_command(max(result.layers_without_distances), tablebase.directory)}` adds them)")


@cli.command(name="analyse")
@click.argument("record")
@click.option("--start", default=None, help="Start position of the record (default: the opening).")
@directory_option
@click.option("--time-per-ply", "time_per_ply", type=float, default=1.0, show_default=True,
              help="Seconds of search for a position above the tables, shared by its legal moves.")
@click.option("--max-tables", "max_tables", type=click.IntRange(0, 48), default=None,
              help="Answer positions of up to N seeds from the tables, search above (default: every table).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def analyse_command(record: str, start: str | None, directory: str | None, time_per_ply: float,
                    max_tables: int | None, as_json: bool) -> None:
    """Every ply of the game RECORD (e.g. "1. F b 2. D a") against perfect play.

    Per ply: the value before the move and of the move played (from the
    mover's view), the best moves, the seeds given away and a mark: ?!
    inaccuracy (1-3 given away), ? mistake (4 or more), ?? blunder (changes
    win, draw or loss). Above the tables each ply is searched with the true
    repetition rule over the game so far; ~ marks an estimate. See
    docs/ANALYSIS.md.
    """
    from .analysis import MIN_TIME_PER_PLY, analyse

    if not math.isfinite(time_per_ply) or time_per_ply < MIN_TIME_PER_PLY:
        raise UserError(f"--time-per-ply must be a finite number of seconds >= {MIN_TIME_PER_PLY}, got {time_per_ply}")
    from .position import parse_record

    first = parse_position(start)
    plies = len(parse_record(record))
    show_bar = not as_json and sys.stderr.isatty()
    with _open_tablebase(directory, first, quiet=as_json) as tablebase:
        from tqdm import tqdm

        layers = [n for n in tablebase.layers() if max_tables is None or n <= max_tables]
        reach = f"tables to {max(layers)} seeds" if layers else "no tables"
        how = f"{reach}; above them {time_per_ply:g} s of search a ply; true repetition rule, the game's history"

        with tqdm(desc="analysing", unit="ply", total=plies or None, disable=not show_bar,
                  file=sys.stderr, leave=False) as bar:

            def shown(ply):
                # Each row as soon as its ply is done (the bar, on stderr, cleared around it).
                bar.update(1)
                if as_json:
                    return
                with tqdm.external_write_mode(file=sys.stderr):
                    if ply.ply == 1:
                        _echo_analysis_header(ply.position, how)
                    _echo_analysis_row(ply)

            report = analyse(record, tablebase, time_per_ply=time_per_ply, max_tables=max_tables, start=first,
                             progress=shown)
    if as_json:
        emit_json(report.as_dict())
        return
    _echo_analysis_end(report)


def _echo_analysis_header(start, how):
    click.echo(f"start: {start}   ({how})")
    click.echo(f"{'ply':>4}  {'move':<10} {'seeds':>5} {'before':>6} {'played':>6} {'given':>5}  {'best':<12} source")


def _echo_analysis_row(ply):
    def value(number, exact):
        return f"{number:+d}{'' if exact else '~'}"

    played_exact = next(m.exact for m in ply.moves if m.move == ply.move)
    given = f"{ply.given_away}{'' if ply.exact else '~'}"
    source = ply.source if ply.cycles == "own" else f"{ply.source}, split"
    slower = ""
    if ply.time_given:
        plies = f"{ply.time_given} pl{'y' if ply.time_given == 1 else 'ies'}"
        slower = f"  converts {plies} slower" if ply.best_value > 0 else f"  gives in {plies} sooner"
    click.echo(
        f"{ply.ply:>4}  {ply.notation:<10} {ply.seeds:>5} {value(ply.value_before, ply.exact):>6} "
        f"{value(ply.value_after, played_exact):>6} {given:>5}  {' '.join(ply.best_moves):<12} {source}{slower}"
    )


def _echo_analysis_end(report):
    """The summary under the rows: each side's account, the end of the game, the legend."""
    for summary in (report.south, report.north):
        marks = f"{summary.inaccuracies} ?!, {summary.mistakes} ?, {summary.blunders} ??"
        moves = f"{summary.moves} move{'' if summary.moves == 1 else 's'}"
        click.echo(f"{summary.side}: {moves}, {summary.best_moves} best, gave away {summary.given_away} ({marks})"
                   + ("" if summary.exact else ", some values estimated"))
    if report.over:
        click.echo(f"game over ({report.end_reason}): {_score_text(report.result)}")
    else:
        click.echo(f"the game goes on: {report.position}")
    click.echo("before, played: values for the mover (his captures from there on minus the opponent's, under "
               "perfect play); given: best - played")
    click.echo("~ an estimate (searched, not proven); ?! gives away 1-3, ? 4 or more, ?? changes win/draw/loss")
    if any(ply.time_given for ply in report.plies):
        click.echo("converts N plies slower: a best move, but the side ahead could have captured N plies sooner "
                   "(distance to conversion); gives in N plies sooner: the side behind could have held out N longer")
    if any(ply.cycles == "split" for ply in report.plies):
        click.echo(f"split: some of the ply's values follow {Rule.SPLIT.describe()}, not the game's repetition rule")


AweleGroup.aliases["analyze"] = "analyse"


@cli.command()
@click.option("--side", type=click.Choice(["S", "N"], case_sensitive=False), default="S", show_default=True,
              help="The side you play.")
@click.option("--position", "start", default=None, help="Start position (default: the opening).")
@click.option("--moves", default=None, help="Moves already played from the start (they count for repetitions).")
@directory_option
@click.option("--time", "seconds", type=click.FloatRange(min=0.01), default=3, show_default=True,
              help="Seconds awele searches a move above the tables.")
@click.option("--hash", "hash_mb", type=click.IntRange(1, 65536), default=64, show_default=True,
              help="Transposition table size in MiB.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads awele searches on above the tables (default: every core).")
def play(side: str, start: str | None, moves: str | None, directory: str | None, seconds: float, hash_mb: int,
         threads: int | None) -> None:
    """Play against awele in the terminal: perfect play from the tables, search above them.

    Type a house letter to move, `values` for every move's value (for you:
    exact from the tables, estimated by a search of --time seconds above
    them), `undo` to take back your last move, `quit` to stop. From the
    tables awele searches under the true repetition rule over the game
    played so far, the tables' values its estimates at the horizon, since
    their values may rest on endless play, which that rule ends (it plays
    the tables' move, Tablebase.best_move, where it takes every seed left
    or loses them all). Above them it searches with that rule too. It says
    the value it found, for itself, exact or an estimate.
    """
    from .engine import Engine

    side = side.upper()
    game = _game_of(start, moves)
    position = game.position
    with _open_tablebase(directory, position) as tablebase:
        engine = Engine(tablebase, lambda: _searcher(tablebase.directory, None, hash_mb, threads))
        while not game.is_over():
            current = game.position
            click.echo(current.diagram())
            if current.to_move != side:
                found = _interruptible(functools.partial(engine.move, game, time=seconds))
                if found.source != "table":
                    kind = (f"exact, {_rule_text(found.rule.value)}" if found.exact else
                            f"an estimate at depth {found.depth}")
                    value = "?" if found.value is None else f"{found.value:+d}"
                    click.echo(f"(awele searched {found.nodes:,} nodes: value {value} for {_side_name(current)} "
                               f"(awele), {kind})")
                captured = game.play(found.move)
                click.echo(f"awele plays {found.move}" + (f", capturing {captured}" if captured else ""))
                continue
            answer = click.prompt(f"your move ({' '.join(current.legal_moves())}, values, undo, quit)").strip()
            if answer == "quit":
                click.echo("stopped")
                return
            if answer == "values":
                whose = f"values for {_side_name(current)} (you, to move): your captures from here on minus awele's"
                valued = _interruptible(functools.partial(engine.position, game, time=seconds))
                how = ("exact, from the tables" if valued.source == "table" else
                       f"above the tables: searched {seconds:g} s in all")
                click.echo(f"{whose}; {how}, {_rule_text(valued.rule.value)}, over the game")
                _echo_moves(valued.moves, show_exact=valued.source != "table")
                continue
            if answer == "undo":
                if len(game.moves) < 2:
                    click.echo("nothing to take back")
                    continue
                game.undo()
                game.undo()
                continue
            try:
                captured = game.play(answer)
            except AweleError as error:
                click.echo(f"illegal: {error}")
                continue
            if captured:
                click.echo(f"you capture {captured}")
        click.echo(game.position.diagram())
        click.echo(f"game over ({game.end_reason}): {_score_text(game.result())}")


@cli.command()
@click.option("--quick", is_flag=True, help="Shallower perft and searches (about a third of the time).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def bench(quick: bool, as_json: bool) -> None:
    """Measure move generation, a small build, probes and search on one table.

    The build goes to a temporary folder (layers 0..12); probes and the search
    suite (solver/bench.py) use those tables. Search runs on one thread.
    """
    from .bench import bench_all

    results = bench_all(quick=quick)
    if as_json:
        emit_json(results)
        return
    movegen, build, probe, search = (results[k] for k in ("movegen", "build", "probe", "search"))
    rows = [
        (f"movegen perft({movegen['depth']})", f"{movegen['leaves']:,} leaves",
         f"{movegen['seconds']:.3f} s", f"{movegen['leaves_per_second'] / 1e6:.0f} M leaves/s"),
        (f"build 0..{build['max_seeds']}", f"{build['positions']:,} positions",
         f"{build['seconds']:.2f} s", f"{build['positions_per_second'] / 1e6:.2f} M positions/s"),
        (f"probe values() {probe['seeds']} seeds", "", "", f"{probe['values_per_second'] / 1e6:.1f} M positions/s"),
        (f"probe value() {probe['seeds']} seeds", "", "", f"{probe['single_probes_per_second']:,.0f} probes/s"),
    ]
    for row in search["positions"]:
        kind = "exact" if row["exact"] else f"depth {row['depth']}"
        rows.append((f"search {row['name']}", f"{row['nodes']:,} nodes, {kind}", f"{row['seconds']:.2f} s",
                     f"{row['nps'] / 1e6:.1f} M nodes/s"))
    rows.append(("search total", f"{search['nodes']:,} nodes", f"{search['seconds']:.2f} s",
                 f"{search['nps'] / 1e6:.1f} M nodes/s"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        click.echo(f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:>{widths[3]}}")


def _layer_list(text, option):
    """Seed counts from "8-24" or "25,26" (or a mix: "8-12,14"): each part a
    layer or a range LOW-HIGH of layers 0..48 with LOW <= HIGH."""
    import re

    layers: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d{1,2})\s*(?:-\s*(\d{1,2})\s*)?", part)
        if not match:
            raise UserError(f"{option}: give seed counts 0..48 like 8-24 or 25,26, got {text!r}")
        low, high = int(match[1]), int(match[2] if match[2] is not None else match[1])
        if not low <= high <= 48:
            raise UserError(f"{option}: {part.strip()!r} is not a range of seed counts 0..48 (low-high)")
        layers.extend(range(low, high + 1))
    return layers


def _fit_number(context, parameter, value):
    """--games, --per-layer and --seed within what a fit can take, refused before any work."""
    from .limits import MAX_FIT_GAMES, MAX_FIT_PER_LAYER, MAX_FIT_SEED

    low, high = {"games": (1, MAX_FIT_GAMES), "per_layer": (1, MAX_FIT_PER_LAYER), "drawn": (0, MAX_FIT_PER_LAYER),
                 "seed": (0, MAX_FIT_SEED)}[parameter.name]
    if not low <= value <= high:
        raise UserError(f"--{parameter.name.replace('_', '-')} must be {low:,}..{high:,}, got {value:,}")
    return value


def _fit_output(context, parameter, value):
    """--out: a file name in a folder that exists and can be written, checked
    before the fit (minutes) rather than after it."""
    if value is None:
        return None
    if not value.strip():
        raise UserError("--out needs a file name, not an empty one")
    folder = os.path.dirname(value) or "."
    if not os.path.isdir(folder):
        raise UserError(f"--out {value}: the folder {folder} does not exist")
    if os.path.isdir(value):
        raise UserError(f"--out {value} is a folder: give a file name")
    # A file made and removed at once tells what the folder takes (root may
    # write where os.access says yes, yet /proc refuses every new name).
    probe = f"{value}.probe-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        os.remove(probe)
    except OSError as error:
        raise UserError(f"--out {value}: cannot write in {folder}: {error.strerror or error}") from None
    return value


@cli.command(name="fit-evaluation")
@directory_option
@click.option("--kind", type=click.Choice(["linear", "patterns"]), default="linear", show_default=True,
              help="linear: the ten features (a version 1 file); patterns: the features and pattern tables per "
                   "band of seeds (a version 2 file, fitted by ridge least squares: the default leaf's kind).")
@click.option("--fit-layers", default=None,
              help="Layers to fit on, e.g. 8-24 (default: from 8 up to the held-out ones).")
@click.option("--holdout", default=None,
              help="Layers above the fit to measure on, e.g. 25-26 (default: the top two built).")
@click.option("--games", type=int, default=20_000, show_default=True, callback=_fit_number,
              help="Playouts that the positions are drawn from (1..1,000,000).")
@click.option("--per-layer", type=int, default=200_000, show_default=True, callback=_fit_number,
              help="At most this many positions valued per layer.")
@click.option("--per-seed/--flat", default=False, show_default=True,
              help="Let every weight change linearly with the seeds on board, or keep it flat (linear only).")
@click.option("--drawn", type=int, default=1_000_000, show_default=True, callback=_fit_number,
              help="Patterns only: about this many positions drawn uniformly by rank from each layer, "
                   "beside those of the playouts.")
@click.option("--ridge", type=click.FloatRange(min=0, min_open=True, max=1e9), default=10.0, show_default=True,
              help="Patterns only: added to the normal equations' diagonal.")
@click.option("--seed", type=int, default=1, show_default=True, callback=_fit_number,
              help="Random seed of the playouts (0..2**32-1).")
@click.option("--out", default=None, callback=_fit_output,
              help="Write the weights file here (the shipped ones: solver/data/evaluation-v2-patterns.json, "
                   "evaluation-v1.json), atomically and never through a link; default: report only.")
@click.option("--json", "as_json", is_flag=True, help="Print the fit report as JSON.")
def fit_evaluation(directory: str | None, kind: str, fit_layers: str | None, holdout: str | None, games: int,
                   per_layer: int, per_seed: bool, drawn: int, ridge: float, seed: int, out: str | None,
                   as_json: bool) -> None:
    """Fit the search's evaluation to the exact values of the tables in --dir.

    Positions from playouts are valued from the tables of the fitted layers;
    the report gives the RMSE and sign agreement on held-out layers above
    them, against the 0 leaf. With --kind patterns, positions drawn by rank
    from each layer are fitted too, and the report gives the RMSE of the
    pattern leaf, of the shipped linear leaf and of the 0 leaf, on the
    positions of games and on those drawn. Every argument is checked before
    the fit starts; Ctrl-C stops it at once, and nothing is written unless it
    ends.
    """
    fitted = _layer_list(fit_layers, "--fit-layers") if fit_layers is not None else None
    held = _layer_list(holdout, "--holdout") if holdout is not None else None
    from . import evaluation, fitting, tables

    directory = directory or tables.default_directory()
    if fitted is None or held is None:
        default_fitted, default_held = fitting.default_layers(directory)
        fitted = default_fitted if fitted is None else fitted
        held = default_held if held is None else held
    fitting.check_fit_layers(directory, fitted, held)
    say = None if as_json else lambda text: click.echo(text, err=True)
    if kind == "patterns":
        weights, report = _interruptible(lambda: fitting.fit_patterns(
            directory, fitted, held, games=games, per_layer=per_layer, drawn=drawn, ridge=ridge, seed=seed,
            progress=say))
        if out:
            evaluation.save_weights(out, weights, report)
        if as_json:
            emit_json({"out": out, **report})
            return
        click.echo(f"fitted on layers {report['fit_layers']}, held out {report['holdout_layers']}")
        click.echo("layer  positions      count  patterns rmse  linear rmse  zero rmse")
        for row in report["fit"] + report["holdout"]:
            where = "held out" if row["seeds"] in report["holdout_layers"] else "fitted"
            if row["count"]:
                click.echo(f"{row['seeds']:5d}  {row['positions']:9s} {row['count']:10,} {row['patterns_rmse']:14.3f} "
                           f"{row['linear_rmse']:12.3f} {row['zero_rmse']:10.3f}  {where}")
        for positions, pooled in report["holdout_pooled"].items():
            if pooled["count"]:
                click.echo(f"held out, {positions}, pooled: patterns {pooled['patterns_rmse']:.3f}, linear "
                           f"{pooled['linear_rmse']:.3f}, 0 leaf {pooled['zero_rmse']:.3f}")
        if out:
            click.echo(f"weights written to {out}")
        return
    weights, report = _interruptible(lambda: fitting.fit(directory, fitted, held, games=games, per_layer=per_layer,
                                                         per_seed=per_seed, seed=seed, progress=say))
    if out:
        evaluation.save_weights(out, weights, report)
    if as_json:
        emit_json({"weights": [round(float(w), 6) for w in weights], "out": out, **report})
        return
    click.echo(f"fitted on layers {report['fit_layers']}, held out {report['holdout_layers']}")
    click.echo("layer  positions   rmse  zero rmse  sign  zero sign")
    for row in report["fit"] + report["holdout"]:
        kind = "held out" if row["seeds"] in report["holdout_layers"] else "fitted"
        click.echo(f"{row['seeds']:5d} {row['positions']:10,} {row['rmse']:6.3f} {row['zero_rmse']:10.3f} "
                   f"{row['sign_agreement']:5.3f} {row['zero_sign_agreement']:10.3f}  {kind}")
    pooled = report["holdout_pooled"]
    if pooled["positions"]:
        click.echo(f"held out, pooled: rmse {pooled['rmse']:.3f} (0 leaf: {pooled['zero_rmse']:.3f}), "
                   f"sign agreement {pooled['sign_agreement']:.3f} (0 leaf: {pooled['zero_sign_agreement']:.3f})")
    if out:
        click.echo(f"weights written to {out}")


@cli.command()
@directory_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port to listen on (0: any free port).")
@click.option("--max-search-time", type=click.FloatRange(min=0, min_open=True), default=10, show_default=True,
              help="Most seconds a request may give a search.")
def serve(directory: str | None, host: str, port: int, max_search_time: float) -> None:
    """Serve the oracle: a page to play and study positions, and a JSON API.

    The page shows the board, the position's value and predicted score and
    every legal move's value from the tables (a search above them); play by
    clicking, against awele or not. The API is described at /docs. The
    server only reads the tables; it builds nothing.
    """
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError:
        raise UserError("the web oracle needs the web extra: pip install 'awele[web]'") from None
    from . import tables
    from .web.app import create_app, listening_socket

    if not math.isfinite(max_search_time):
        raise UserError(f"--max-search-time must be a finite number of seconds, got {max_search_time}")
    directory = directory or tables.default_directory()
    if not os.path.isdir(directory):
        raise UserError(f"no tables folder {directory}: build tables with `awele build`, or give --dir")
    app = create_app(directory, max_search_time=max_search_time)
    try:
        listener = listening_socket(host, port)
    except OSError as error:
        raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    bound_host, bound_port = listener.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    layers = tables.built_layers(directory)
    held = f"tables for {layers[0]}..{layers[-1]} seeds" if layers else "no tables (search only)"
    click.echo(f"awele oracle on http://{shown}:{bound_port}/ ({held} in {directory}; API docs at /docs); "
               "Ctrl-C stops it", err=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[listener])


@cli.command(name="compile")
@click.option("--json", "as_json", is_flag=True, help="Print the seconds of each step as JSON.")
def compile_command(as_json: bool) -> None:
    """Compile the kernels ahead, so that no first command waits for them.

    numba compiles awele's kernels on their first call and keeps them in its
    cache (the package's __pycache__, or $NUMBA_CACHE_DIR). On a fresh
    install that first call is the first `isready` of `awele uci`, the first
    search or the first build; this compiles them all now (tables of 0..4
    seeds are built in a temporary folder and removed).
    """
    from .compiled import compile_kernels

    started = time.perf_counter()
    steps = compile_kernels(None if as_json else lambda step: click.echo(f"compiling {step}...", err=True))
    total = round(time.perf_counter() - started, 3)
    if as_json:
        emit_json({"steps": steps, "seconds": total})
        return
    click.echo(f"kernels compiled (or loaded from numba's cache) in {total:.1f} s: "
               + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in steps.items()))


@cli.command(name="uci")
@directory_option
def uci_command(directory: str | None) -> None:
    """Speak UCI on standard input and output, as Oware GUIs expect.

    The dialect of Aalina and the Aualé GUI (docs/UCI.md): `position startpos
    moves FbDa` or `position fen 4-4-4-4-4-4-4-4-4-4-4-4-0-0-S`, `go movetime
    1000` (or wtime/btime, depth, nodes, infinite), `stop`, `quit`; answers
    `info ... score cp ... pv ...` and `bestmove`. Positions whose layer is in
    the tables (--dir, or the Tables option) are answered from them; others
    are searched. Lines it does not understand are logged on stderr and
    ignored.
    """
    from .uci import main as speak

    speak(directory)


cli.add_command(suite_command)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the console script."""
    cli.main(args=argv, prog_name="awele")


if __name__ == "__main__":
    main()
