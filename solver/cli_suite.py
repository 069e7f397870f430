"""`awele suite make` and `awele suite run`: exact test suites (solver/suite.py)."""

from __future__ import annotations

import os

import click

from .places import default_directory
from .report import Rule


@click.group(name="suite")
def suite_command() -> None:
    """Exact test suites: make one from the tables, run one on any UCI engine.

    A suite holds positions drawn from real play with their exact answers
    (every best move, every move's value, the distance to conversion) and a
    difficulty; a run gives each to an engine and measures the time and nodes
    to solution (docs/SUITES.md).
    """


@suite_command.command(name="make")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help="Tables folder holding the suite's layers (default: as `awele best`).")
@click.option("--seeds", "seed_range", required=True, metavar="LOW-HIGH",
              help="Seeds on the board of the suite's positions, e.g. 13-20.")
@click.option("--count", type=click.IntRange(1, 100_000), default=200, show_default=True,
              help="Positions in the suite.")
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=1, show_default=True,
              help="The play-outs' random seed: the same seed and tables make the same suite.")
@click.option("--out", "out", type=click.Path(dir_okay=False), required=True, help="The suite file to write.")
@click.option("--quiet", is_flag=True, help="No line per position.")
def make_command(directory: str | None, seed_range: str, count: int, seed: int, out: str, quiet: bool) -> None:
    """Draw COUNT positions of LOW-HIGH seeds from awele's play-outs and write
    them with their exact answers from the tables and their difficulty."""
    from .probe import Tablebase
    from .suite import SuiteError, make_suite, write_suite
    from .version import __version__

    low, high = _seed_range(seed_range)
    directory = directory or default_directory()
    with Tablebase(directory) as tablebase:
        entries = make_suite(tablebase, count, low, high, seed, None if quiet else click.echo)
    if len(entries) < count:
        raise SuiteError(f"the play-outs gave {len(entries)} positions of {low}-{high} seeds with a choice to make; "
                         f"{count} were asked for (try another --seed or a wider --seeds)")
    write_suite(out, entries, [f"made by awele {__version__}: awele suite make --seeds {low}-{high} "
                               f"--count {count} --seed {seed}",
                               "values: seeds the side to move captures from now on less the other's, under "
                               f"{Rule.SPLIT.describe()}"])
    click.echo(f"wrote {len(entries)} positions to {out}")


def _seed_range(text: str) -> tuple[int, int]:
    low, dash, high = text.partition("-")
    if not (dash and low.isdigit() and high.isdigit() and 2 <= int(low) <= int(high) <= 48):
        raise click.BadParameter(f"{text!r}: write LOW-HIGH, two seed counts 2..48", param_hint="--seeds")
    return int(low), int(high)


@suite_command.command(name="run")
@click.argument("suite_file", metavar="SUITE", type=click.Path(dir_okay=False))
@click.option("--engine", "engines", multiple=True, required=True, metavar="SPEC",
              help="uci:COMMAND LINE, or awele[:tables=DIR,max_table_seeds=N,evaluation=zero]; twice to compare.")
@click.option("--movetime", type=click.FloatRange(0.001, 3600), default=None, help="Seconds a position.")
@click.option("--depth", type=click.IntRange(1, 200), default=None, help="Plies a position, instead.")
@click.option("--nodes", type=click.IntRange(1), default=None, help="Nodes a position, instead.")
@click.option("--uci-option", "uci_options", multiple=True, metavar="NAME=VALUE",
              help="Sent to every UCI engine as setoption.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N positions.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="Write the results here.")
@click.option("--plot", "plot_out", type=click.Path(dir_okay=False), default=None,
              help="Write an SVG of solved share against time to solution here.")
@click.option("--quiet", is_flag=True, help="No line per position.")
def run_command(suite_file: str, engines: tuple[str, ...], movetime: float | None, depth: int | None,
                nodes: int | None, uci_options: tuple[str, ...], limit: int | None, json_out: str | None,
                plot_out: str | None, quiet: bool) -> None:
    """Give every position of SUITE to each engine and report the solved share,
    the time and nodes to solution, and the value its moves give up."""
    from .suite import Limits, Run, engine_from, plot, read_suite, results_json, run_suite, table

    if sum(x is not None for x in (movetime, depth, nodes)) > 1:
        raise click.UsageError("give one of --movetime, --depth and --nodes")
    limits = Limits(movetime if movetime is not None or depth is not None or nodes is not None else 1.0, depth, nodes)
    entries = read_suite(suite_file)[:limit]
    runs = []
    for spec in engines:
        engine = engine_from(spec, uci_options)
        run = Run(spec, {"movetime": limits.movetime, "depth": depth, "nodes": nodes})

        def said(attempt, spec=spec):
            if not quiet:
                mark = "solved" if attempt.solved else (attempt.failure or "not solved")
                at = "" if attempt.seconds is None else f" at {attempt.seconds:.3f} s"
                click.echo(f"{spec[:24]:<24} {attempt.id:<12} {attempt.move or '-':<2} {mark}{at}")

        try:
            run.attempts = run_suite(engine, entries, limits, said)
        finally:
            engine.close()
        runs.append(run)
    click.echo(table(runs))
    if json_out:
        _write(json_out, results_json(runs, os.path.basename(suite_file)))
    if plot_out:
        _write(plot_out, plot(runs, limits.movetime or 10.0))


def _write(path: str, text: str) -> None:
    temporary = f"{path}.partial"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)
