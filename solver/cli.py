"""The `awele` command line: a thin click layer over the Python API.

User errors (bad positions, illegal moves, missing tables) print one line on
stderr and exit with status 2; no traceback reaches the user.
"""

import json
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


def main(argv=None):
    """Entry point of the console script."""
    cli.main(args=argv, prog_name="awele")


if __name__ == "__main__":
    main()
