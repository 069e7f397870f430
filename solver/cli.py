"""The `awele` command line: a thin click layer over the Python API.

User errors (bad positions, illegal moves, missing tables) print one line on
stderr and exit with status 2; no traceback reaches the user.
"""

import json
import os
import sys
import time

import click

from . import __version__
from .errors import AweleError
from .position import Game, Position, perft

EXIT_USER_ERROR = 2


class UserError(click.ClickException):
    """A user mistake reported as one line with exit status 2."""

    exit_code = EXIT_USER_ERROR


def parse_position(text, moves=None):
    """A Position from notation (canonical or 12 integers) and/or a move record."""
    try:
        start = Position.from_string(text) if text else Position.initial()
        if moves:
            return Game.from_record(moves, start).position
        return start
    except AweleError as error:
        raise UserError(str(error)) from None


def emit_json(data):
    click.echo(json.dumps(data, indent=2))


class AweleGroup(click.Group):
    """A click group whose errors are one line on stderr with exit status 2."""

    def main(self, args=None, prog_name="awele", standalone_mode=True, **extra):
        try:
            result = super().main(args=args, prog_name=prog_name, standalone_mode=False, **extra)
        except click.exceptions.Abort:
            click.echo("awele: aborted", err=True)
            sys.exit(130)
        except click.ClickException as error:
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
def cli():
    """Exact solver and endgame tables for Awele (Oware, Abapa rules).

    Positions are written A-B-C-D-E-F/a-b-c-d-e-f SIDE S:N (South's houses
    A..F, North's a..f, both in sowing order; side to move; seeds captured by
    South and North), or as 12 integers.
    """


@cli.command()
@click.argument("position", required=False)
@click.option("--moves", help='Moves played from POSITION (or the opening), e.g. "1. F b 2. D a".')
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def show(position, moves, as_json):
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
        south, north = pos.result()
        click.echo(f"game over ({pos.terminal_rule()}): South {south}, North {north}")
    else:
        click.echo(f"legal moves: {' '.join(pos.legal_moves())}")


@cli.command("perft")
@click.argument("position")
@click.argument("depth", type=click.IntRange(min=0))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def perft_command(position, depth, as_json):
    """Count the leaves DEPTH plies below POSITION ('initial' for the opening)."""
    pos = Position.initial() if position.lower() in ("initial", "start", "opening") else parse_position(position)
    started = time.perf_counter()
    leaves = perft(pos, depth)
    seconds = time.perf_counter() - started
    if as_json:
        emit_json({"position": str(pos), "depth": depth, "leaves": leaves, "seconds": seconds})
    else:
        click.echo(leaves)


def _directory_option(function):
    return click.option(
        "--dir",
        "directory",
        type=click.Path(file_okay=False),
        default=None,
        help="Tables folder (default: $AWELE_DATABASES or ./databases).",
    )(function)


@cli.command()
@click.option("--max-seeds", type=click.IntRange(0, 48), required=True, help="Build every layer 0..N.")
@_directory_option
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Worker threads (default: all cores).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per layer.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def build(max_seeds, directory, threads, as_json, quiet):
    """Build the endgame tables up to N seeds; layers already built are reused."""
    from tqdm import tqdm

    from . import index, tables

    directory = directory or tables.default_directory()
    bars = {}

    def progress(seeds, step, fraction):
        if quiet or as_json:
            return
        bar = bars.get(seeds)
        if bar is None:
            bar = bars[seeds] = tqdm(total=seeds + 1, desc=f"layer {seeds:2d}", unit="stage", leave=False)
        bar.set_postfix_str(step)
        bar.update(1)

    def report(row):
        bar = bars.pop(row["seeds"], None)
        if bar is not None:
            bar.close()
        if as_json:
            click.echo(json.dumps(row))
            return
        if not row["built"]:
            click.echo(f"layer {row['seeds']:2d}: {row['positions']:>13,} positions  present, checked")
            return
        click.echo(
            f"layer {row['seeds']:2d}: {row['positions']:>13,} positions  {row['seconds']:8.2f} s  "
            f"{row['positions_per_second'] or 0:>12,.0f} positions/s  peak {row['peak_bytes'] / 2**20:8.0f} MiB"
        )

    if not as_json:
        total = sum(index.layer_size(n) for n in range(max_seeds + 1))
        click.echo(f"building layers 0..{max_seeds} ({total:,} positions) in {directory}")
    started = time.perf_counter()
    tables.build(max_seeds, directory, threads=threads, report=report, progress=progress)
    if not as_json:
        click.echo(f"done in {time.perf_counter() - started:.1f} s")


@cli.command()
@_directory_option
@click.option("--full", is_flag=True, help="Read every value back (checksums and histograms).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(directory, full, as_json):
    """List the tables: sizes, value histograms and check status."""
    from . import tables

    directory = directory or tables.default_directory()
    layers = tables.built_layers(directory) if os.path.isdir(directory) else []
    rows = [tables.table_info(directory, seeds, full=full) for seeds in layers]
    if as_json:
        emit_json({"directory": directory, "layers": rows})
        return
    if not rows:
        click.echo(f"no tables in {directory}; build some with `awele build --max-seeds 16`")
        return
    click.echo(f"tables in {directory}")
    click.echo(f"{'seeds':>5} {'positions':>14} {'MiB':>9} {'B/pos':>6} {'win':>7} {'draw':>7} {'loss':>7}  status")
    for row in rows:
        if row["status"] != "ok":
            click.echo(f"{row['seeds']:>5} {row['positions']:>14,} {'':>9} {'':>6} {'':>7} {'':>7} {'':>7}  "
                       f"{row['status']}: {row.get('error', '')}")
            continue
        counts = row["histogram"]
        seeds = row["seeds"]
        wins, draws, losses = sum(counts[seeds + 1 :]), counts[seeds], sum(counts[:seeds])
        total = max(1, row["positions"])
        click.echo(
            f"{seeds:>5} {row['positions']:>14,} {row['bytes'] / 2**20:>9.2f} {row['bytes_per_position']:>6.3f} "
            f"{100 * wins / total:>6.1f}% {100 * draws / total:>6.1f}% {100 * losses / total:>6.1f}%  ok"
        )


@cli.command()
@click.option("--seeds", type=click.IntRange(0, 48), default=None, help="Layer to check (default: every layer built).")
@_directory_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(seeds, directory, as_json):
    """Re-check every position of a layer against its moves."""
    from . import retrograde, tables

    directory = directory or tables.default_directory()
    layers = [seeds] if seeds is not None else (tables.built_layers(directory) if os.path.isdir(directory) else [])
    if not layers:
        raise UserError(f"no tables in {directory} to verify")
    lower = retrograde.LowerLayers(max(layers))
    results = []
    failed = False
    for layer in layers:
        started = time.perf_counter()
        count, examples = tables.verify(directory, layer, lower)
        seconds = time.perf_counter() - started
        failed = failed or count > 0
        results.append({"seeds": layer, "mismatches": count, "examples": examples, "seconds": seconds})
        if not as_json:
            status = "ok" if count == 0 else f"{count:,} MISMATCHES"
            click.echo(f"layer {layer:2d}: {status} ({seconds:.1f} s)")
            for board, value in examples:
                click.echo(f"    mover-view board {board} stored {value}")
    if as_json:
        emit_json({"directory": directory, "layers": results, "ok": not failed})
    if failed:
        raise click.exceptions.Exit(1)


def main(argv=None):
    """Entry point of the console script."""
    cli.main(args=argv, prog_name="awele")


if __name__ == "__main__":
    main()
