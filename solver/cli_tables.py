"""The commands of the build side: build, plan, info, verify."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Any

import click

from .cli_common import (
    EXIT_USER_ERROR,
    UserError,
    directory_option,
    emit_json,
    interruptible,
    layer_ranges,
    memory_budget,
    memory_option,
)
from .errors import AweleError


@click.command()
@click.option("--max-seeds", type=click.IntRange(0, 48), required=True, help="Build every layer 0..N.")
@directory_option
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Worker threads (default: all cores; under MPI, the cores shared by the processes of a machine).")
@memory_option
@click.option("--checkpoint-dir", type=click.Path(file_okay=False), default=None,
              help="Save each layer's working state at stage boundaries here, so a rerun resumes mid-layer "
              "(a layer in the disk mode does so in --scratch).")
@click.option("--checkpoint-interval", type=click.FloatRange(min=0), default=600.0, show_default=True,
              metavar="SECONDS", help="At most one checkpoint per this many seconds (also of a layer in the disk "
              "mode, in --scratch).")
@click.option("--scratch", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Where layers built in the disk mode, the lean stages or lean slices (MPI) keep their working "
              "files (default: awele-scratch in --dir).")
@click.option("--leave-out-47", "leave_out_47", is_flag=True,
              help="Do not build layer 47: no game reaches it (the first capture takes two seeds).")
@click.option("--no-distance", "no_distance", is_flag=True,
              help="Write the values alone, without each layer's distances to conversion (a later build without "
              "this option adds them to the files, reading the values).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per layer.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
def build(max_seeds: int, directory: str | None, threads: int | None, memory: str | None, checkpoint_dir: str | None,
          checkpoint_interval: float, scratch: str | None, leave_out_47: bool, no_distance: bool, as_json: bool,
          quiet: bool) -> None:
    """Build the endgame tables up to N seeds; layers already built are reused.

    Each layer takes 1.5 bytes a position while it is built, plus its smaller
    layers (n-15..n-2) at a byte a position, a group at a time when they do
    not all fit in the memory budget (see `awele plan`). A layer that does
    not fit so is built in the disk mode: its exits a slice at a time
    through --scratch, then its stages in memory (docs/DISK.md).

    Under MPI (`mpiexec -n P awele build ...`, with the mpi extra) every
    process holds a slice of each layer (in lean slices, half a byte a
    position and a file in --scratch, where the in-memory slices do not
    fit), --memory is each process's budget, and process 0 writes the
    same files (and their distances, computed by process 0 from the
    files); see docs/CLUSTER.md.

    Each layer's file also holds its distances to conversion (plies to the
    next capture under play that keeps the value: `awele best` shows them),
    unless --no-distance; a folder of values alone gains them.
    """
    from . import distributed, tables

    def check_options():
        if threads is not None and threads > (os.cpu_count() or 1):
            raise UserError(f"--threads {threads}: this machine has {os.cpu_count()} cores")
        if not math.isfinite(checkpoint_interval):
            raise UserError("--checkpoint-interval must be a finite number of seconds")

    directory = directory or tables.default_directory()
    processes = distributed.launched_processes()
    if processes == 1:
        check_options()
        _build_here(max_seeds, directory, threads, memory_budget(memory), as_json, quiet, scratch,
                    (UNREACHABLE_LAYER,) if leave_out_47 else (), checkpoint_interval, checkpoint_dir,
                    distances=not no_distance)
        return
    if leave_out_47:
        raise UserError("--leave-out-47 is for a build in one process")
    exchange = distributed.world() if processes > 1 else distributed.Exchange()
    try:
        check_options()
        _build_distributed(exchange, max_seeds, directory, threads, memory, checkpoint_dir, checkpoint_interval,
                           as_json, quiet, distances=not no_distance, scratch=scratch)
    except BaseException as error:
        _distributed_failure(exchange, error)


def _distributed_failure(exchange, error):
    """End a process of a distributed build that failed: an error all
    processes share is reported once (by process 0), any other by the
    process that met it, which then stops the whole job (MPI_Abort)."""
    from . import build as builder

    if isinstance(error, (SystemExit, click.exceptions.Exit)):
        raise error
    if isinstance(error, builder.CollectiveError):
        if exchange.rank == 0:
            raise UserError(str(error)) from None
        sys.exit(EXIT_USER_ERROR)
    if isinstance(error, UserError):  # a bad option: every process meets it alike, before any collective
        if exchange.rank == 0:
            raise error
        sys.exit(EXIT_USER_ERROR)
    if exchange.size == 1:
        raise error
    if isinstance(error, KeyboardInterrupt):
        if exchange.rank != 0:  # mpiexec passes Ctrl-C to every process: one says so
            exchange.abort(130)
        message = "aborted"
    elif isinstance(error, (AweleError, click.ClickException, OSError)):
        message = f"error: process {exchange.rank} of {exchange.size}: " + (
            error.format_message() if isinstance(error, click.ClickException) else str(error))
    else:
        message = f"error: process {exchange.rank} of {exchange.size} failed: {type(error).__name__}: {error}"
    click.echo(f"awele: {message}", err=True)
    sys.stderr.flush()
    exchange.abort(130 if isinstance(error, KeyboardInterrupt) else EXIT_USER_ERROR)


def _layer_bars(show_bars):
    """(bars by layer, progress callback) for tqdm bars of the stages of each layer."""
    from tqdm import tqdm

    bars: dict[int, Any] = {}

    def progress(seeds, step, fraction):
        if not show_bars:
            return
        bar = bars.get(seeds)
        if bar is None:
            bar = bars[seeds] = tqdm(total=seeds + 1, desc=f"layer {seeds:2d}", unit="stage", leave=False)
        bar.set_postfix_str(step)
        bar.update(1)

    return bars, progress


def _layer_reporter(bars, as_json):
    def report(row):
        bar = bars.pop(row["seeds"], None)
        if bar is not None:
            bar.close()
        if as_json:
            click.echo(json.dumps(row))
            return
        if not row["built"]:
            added = (f"; distances added in {row['distance_seconds']:.2f} s" if row.get("distances_added")
                     else "; no room for its distances" if row.get("distances_added") is False else "")
            click.echo(f"layer {row['seeds']:2d}: {row['positions']:>13,} positions  present, checked{added}")
            return
        line = (
            f"layer {row['seeds']:2d}: {row['positions']:>13,} positions  {row['seconds']:8.2f} s  "
            f"{row['positions_per_second'] or 0:>12,.0f} positions/s  peak {row['peak_bytes'] / 2**20:8.0f} MiB"
            + (f"  {row['exit_passes']} exit passes" if row.get("exit_passes", 1) > 1 else "")
            + (f"  distances {row['distance_seconds']:.2f} s" if row.get("distances") else
               "  without distances (no room for them, or the disk mode)" if row.get("distances") is False else "")
            + (f"  disk mode: {row['slices']} slices{' (stages too)' if row['sliced_stages'] else ''}, "
               f"{row['scratch_bytes'] / 1e9:.2f} GB scratch, "
               f"{(row['disk_bytes_read'] + row['disk_bytes_written']) / 1e9:.2f} GB read and written"
               if row.get("mode") == "disk" else "")
            + (f"  lean stages: {(row['disk_bytes_read'] + row['disk_bytes_written']) / 1e9:.2f} GB read and written"
               if row.get("mode") == "lean" else "")
        )
        if row.get("processes", 1) > 1:
            line += (f"  exchanged {row['bytes_exchanged_per_position']:.1f} B/position, "
                     f"{100 * row['communication_share']:.0f}% communicating")
        if row.get("resumed_at_stage") is not None:
            line += f"  (resumed at stage {row['resumed_at_stage']})"
        click.echo(line)

    return report


def _compiling_notice(as_json):
    from . import retrograde

    if not as_json and not retrograde.kernels_cached():
        click.echo(f"compiling the builder's kernels, once (about {retrograde.COMPILE_SECONDS} s; later builds "
                   "start at once)", err=True)


UNREACHABLE_LAYER = 47  # solver.build.UNREACHABLE, without importing the builder for the options


def _build_here(max_seeds, directory, threads, budget, as_json, quiet, scratch=None, leave_out=(),
                checkpoint_interval=600.0, checkpoint_dir=None, distances=True):
    """The build in this process alone."""
    from . import build as builder
    from . import index
    from .plan import disk_plan, least_bytes, mode

    bars, progress = _layer_bars(not (quiet or as_json) and sys.stderr.isatty())
    _compiling_notice(as_json)
    if not as_json:
        total = sum(index.layer_size(n) for n in range(max_seeds + 1) if n not in leave_out)
        need = max(least_bytes(n) for n in range(max_seeds + 1))
        on_disk = [n for n in range(max_seeds + 1) if n not in leave_out and mode(n, budget) == "disk"]
        sliced = [n for n in on_disk if (disk_plan(n, budget) or {}).get("sliced_stages")]
        lean = [n for n in range(max_seeds + 1) if n not in leave_out and mode(n, budget) == "lean"]
        click.echo(f"building layers 0..{max_seeds} ({total:,} positions) in {directory}; "
                   f"memory budget {budget / 2**30:.1f} GiB, the largest layer needs at least {need / 2**30:.1f} GiB"
                   + (f" in memory; layers {', '.join(map(str, on_disk))} in the disk mode, scratch in "
                      f"{scratch or os.path.join(directory, builder.SCRATCH_NAME)}" if on_disk else "")
                   + (f" (layers {', '.join(map(str, sliced))} with their stages in slices too: many times slower, "
                      "see awele plan)" if sliced else "")
                   + (f"; layers {layer_ranges(lean)} in the lean stages (half a byte a position, docs/DISK.md)"
                      if lean else "")
                   + (f"; leaving out layer {', '.join(map(str, leave_out))}" if leave_out else "")
                   + (f"; checkpoints in {checkpoint_dir}" if checkpoint_dir else ""))
    started = time.perf_counter()
    builder.build(max_seeds, directory, threads=threads, memory=budget, report=_layer_reporter(bars, as_json),
                  progress=progress, scratch=scratch, leave_out=leave_out, checkpoint_interval=checkpoint_interval,
                  checkpoint_dir=checkpoint_dir, distances=distances)
    if not as_json:
        click.echo(f"done in {time.perf_counter() - started:.1f} s")


def _build_distributed(exchange, max_seeds, directory, threads, memory, checkpoint_dir, checkpoint_interval, as_json,
                       quiet, distances=True, scratch=None):
    """The build on the processes of `exchange`; only process 0 prints."""
    from . import build as builder
    from . import index

    first = exchange.rank == 0
    budget = memory_budget(memory) if memory is not None else None
    bars, progress = _layer_bars(first and not (quiet or as_json) and sys.stderr.isatty())
    if first:
        _compiling_notice(as_json)
    if first and not as_json:
        total = sum(index.layer_size(n) for n in range(max_seeds + 1))
        each = f"{budget / 2**30:.1f} GiB a process" if budget else "each process's share of its machine's memory"
        click.echo(f"building layers 0..{max_seeds} ({total:,} positions) in {directory} on {exchange.size} "
                   f"process{'es' if exchange.size > 1 else ''}; memory budget: {each}"
                   + (f"; checkpoints in {checkpoint_dir}" if checkpoint_dir else ""))
    started = time.perf_counter()
    builder.build_distributed(max_seeds, directory, exchange, threads=threads, memory=budget,
                              checkpoint_dir=checkpoint_dir, checkpoint_interval=checkpoint_interval,
                              report=_layer_reporter(bars, as_json) if first else None,
                              progress=progress if first else None, distances=distances, scratch=scratch)
    if first and not as_json:
        click.echo(f"done in {time.perf_counter() - started:.1f} s")


@click.command()
@click.option("--max-seeds", type=click.IntRange(0, 48), default=48, show_default=True,
              help="Plan layers 0..N.")
@memory_option
@directory_option
@click.option("--processes", type=click.IntRange(min=1), default=None,
              help="Plan a distributed build on K processes (MPI) instead of this machine alone.")
@click.option("--memory-per-process", default=None, metavar="SIZE",
              help="With --processes: each process's memory, e.g. 256G (default: this machine's budget).")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="With --processes: threads a process (default: this machine's cores). Alone: the machine's "
              "threads, recorded: the rates are those measured, not scaled by cores (docs/OPENING.md).")
@click.option("--disk", default=None, metavar="SIZE",
              help="The disk the tables and the scratch folder share, e.g. 1T: each layer's peak on it, and "
              "the streamed exits cut to fit it.")
@click.option("--bandwidth", type=click.FloatRange(min=0.001), default=1.25, show_default=True, metavar="GB/S",
              help="With --processes: what each process exchanges a second over the network, in GB/s.")
@click.option("--leave-out-47", "leave_out_47", is_flag=True,
              help="Plan a build without layer 47 (no game reaches it), and show what that saves.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plan(max_seeds: int, memory: str | None, directory: str | None, processes: int | None,
         memory_per_process: str | None, threads: int | None, disk: str | None, bandwidth: float,
         leave_out_47: bool, as_json: bool) -> None:
    """Per layer: positions, memory, exit passes, file size and time, under a memory budget.

    Times and file sizes come from the largest layer built in the tables
    folder (its recorded build time and file size), or from stated defaults.
    With --processes K: the distributed build, per layer: memory of each
    process, bytes exchanged, file size and time, and the smallest number
    of such processes that builds layer 48 (a model: see docs/CLUSTER.md).
    """
    from . import plan as model

    if not math.isfinite(bandwidth):
        raise UserError(f"--bandwidth must be a finite number of GB/s, not {bandwidth}")
    if processes is None:
        if memory_per_process is not None:
            raise UserError("--memory-per-process goes with --processes")
        _plan_here(model.plan(max_seeds, memory_budget(memory), directory,
                              leave_out=(UNREACHABLE_LAYER,) if leave_out_47 else (),
                              disk=None if disk is None else _disk_size(disk), threads=threads), max_seeds, as_json)
        return
    if disk is not None:
        raise UserError("--disk is for a plan on one machine (without --processes)")
    if memory is not None and memory_per_process is not None:
        raise UserError("give --memory-per-process (or --memory), not both")
    each = memory_budget(memory_per_process if memory_per_process is not None else memory)
    result = model.cluster_plan(max_seeds, processes, each, directory, threads=threads or os.cpu_count() or 1,
                                bandwidth=bandwidth * 1e9)
    _echo_left_out(result)
    if as_json:
        emit_json(result)
        return
    gib = 2**30
    click.echo(f"{processes} processes x {each / gib:.1f} GiB, {result['threads_per_process']} threads each, "
               f"{bandwidth:g} GB/s each; rate {result['rate']:,.0f} positions/s a process from "
               f"{result['rate_measured_on']}; {result['exchange_bytes_per_position']:.1f} B exchanged a position "
               f"(x (K-1)/K) and overhead x{result['overhead']:.2f} from {result['exchange_measured_on']}")
    click.echo(f"{'seeds':>5} {'positions':>16} {'per process':>12} {'exchanged':>10} {'file':>9} {'time':>10} "
               f"{'lean state':>11} {'passes':>6} {'scratch':>8} {'lean time':>10}  mode")
    total_seconds = total_bytes = 0
    for row in result["layers"]:
        total_seconds += row["lean_seconds"] if row["mode"] == "lean" else row["seconds"]
        total_bytes += row["file_bytes"]
        need = f"{row['process_bytes'] / gib:11.1f}G" if row["fits"] else f"{row['process_bytes'] / gib:6.1f}G(!)"
        lean_need = f"{row['lean_process_bytes'] / gib:.1f}G" + ("" if row["lean_fits"] else "(!)")
        scratch = f"{row['lean_scratch_bytes'] / gib:.1f}G" if row["lean_fits"] else "-"
        click.echo(f"{row['seeds']:>5} {row['positions']:>16,} {need:>12} {row['bytes_exchanged'] / gib:9.1f}G "
                   f"{row['file_bytes'] / gib:8.2f}G {_duration(row['seconds']):>10} {lean_need:>11} "
                   f"{row['lean_exit_passes'] or '-':>6} {scratch:>8} {_duration(row['lean_seconds']):>10}  "
                   f"{row['mode']}")
    lean = [row["seeds"] for row in result["layers"] if row["mode"] == "lean"]
    too_big = [row["seeds"] for row in result["layers"] if row["mode"] == "too big"]
    click.echo(f"all layers 0..{max_seeds}: {_duration(total_seconds)}, {total_bytes / gib:.1f} GiB on disk"
               + (f"; layers {lean[0]}..{lean[-1]} in lean slices" if lean else "")
               + (f"; layers {too_big[0]}.. do not fit (!)" if too_big else ""))
    click.echo("lean slices (the MPI build takes a layer so where its in-memory slices do not fit): half a byte a "
               "position of each slice resident, its value bytes in a state file of each process's own in the "
               "scratch folder, the exits a group of the smaller layers' slices a pass (docs/CLUSTER.md)")
    for seeds, least in result["smallest_cluster"].items():
        click.echo(f"layer {seeds} needs " + (_processes_of(least, each) if least
                   else f"more than {each / gib:.1f} GiB a process, whatever their number"))
    for seeds, least in result["smallest_lean_cluster"].items():
        click.echo(f"layer {seeds} in the lean state needs " + (
            _processes_of(least, each) if least else f"more than {each / gib:.1f} GiB a process"))


def _processes_of(count: int, each: int) -> str:
    """'at least K processes of M GiB' (one process: 'process')."""
    return f"at least {count} process{'es' if count > 1 else ''} of {each / 2**30:.1f} GiB"


def _disk_size(text):
    """The bytes --disk gives (a size as --memory takes it); one line if it is not one."""
    from . import plan as model

    try:
        return model.parse_memory(text)
    except ValueError as error:
        raise UserError(f"--disk: {str(error).replace('a memory size', 'a disk size')}") from None


def _echo_left_out(result):
    """One line on stderr for each layer the plan's measured figures leave out."""
    for seeds, error in result["left_out"].items():
        click.echo(f"awele: layer {seeds} left out of the measured figures: {error}", err=True)


def _plan_here(result, max_seeds, as_json):
    _echo_left_out(result)
    if as_json:
        emit_json(result)
        return
    gib = 2**30
    click.echo(f"memory budget {result['budget_bytes'] / gib:.1f} GiB: builds layers up to "
               f"{result['largest_in_memory']} in memory, {result['largest_layer']} with the disk mode or the lean "
               f"stages; "
               f"rates from {result['measured_on']} ({result['rate']:,.0f} positions/s, "
               f"{result['file_bytes_per_position']:.3f} B/position on disk; scratch disk at "
               f"{result['disk_bandwidth'] / 1e9:.1f} GB/s"
               + (f"; {result['threads']} threads: the rates as measured, not scaled by cores"
                  if result["threads"] else "")
               + ")")
    disk = result["disk_bytes"]
    click.echo(f"{'seeds':>5} {'positions':>16} {'mode':>7} {'memory':>9} {'scratch':>9} {'passes':>6} "
               f"{'file':>9} {'time':>10} {'distances':>13}" + (f" {'disk peak':>10}" if disk else ""))
    total_seconds = total_bytes = 0
    for row in result["layers"]:
        total_seconds += row["seconds"]
        total_bytes += row["file_bytes"]
        if row["mode"] == "left out":
            click.echo(f"{row['seeds']:>5} {row['positions']:>16,} {'-':>7}   left out (no game reaches it)")
            continue
        fits = row["mode"] in ("memory", "disk", "lean")
        memory = row["peak_bytes"] if fits else min(row["disk_least_bytes"], row["lean_least_bytes"])
        shown = "sliced" if row.get("sliced_stages") else "stream" if row.get("streamed_exits") else row["mode"]
        passes = f"{row['exit_slices']}sl" if row.get("streamed_exits") else row["exit_passes"] if fits else "-"
        click.echo(
            f"{row['seeds']:>5} {row['positions']:>16,} {shown:>7} "
            f"{memory / gib:8.1f}G{'' if fits else '!'} {row['scratch_bytes'] / 1e9:8.1f}G "
            f"{passes:>6} {row['file_bytes'] / gib:8.2f}G {_duration(row['seconds']):>10} "
            f"{row['distance_pass']:>6} {row['distance_bytes'] / gib:5.1f}G{'!' * (row['distance_pass'] == 'none')}"
            + (f" {row['disk_peak_bytes'] / 1e9:9.1f}G{'' if row['fits_disk'] else '!'}" if disk else "")
        )
    click.echo(f"all layers 0..{max_seeds}: {_duration(total_seconds)} ({total_seconds / 86400:.1f} days), "
               f"{total_bytes / gib:.1f} GiB on disk"
               " (scratch in GB of 10^9 bytes; memory! = the least the layer needs, more than the budget; "
               "distances: how a layer's file gains them and the pass's memory, none! = the least it needs"
               + ("; stream = the lean stages with streamed exits, in that many slices (sl)"
                  if any(row.get("streamed_exits") for row in result["layers"]) else "") + ")")
    short = [row["seeds"] for row in result["layers"] if disk and not row["fits_disk"]]
    if short:
        click.echo(f"layers {short[0]}.. do not fit the disk of {disk / 1e9:.0f} GB beside the tables before them "
                   "(disk peak!)")
    if result["leave_out"]:
        saved = result["saved"]
        click.echo(f"leaving out layer {', '.join(map(str, result['leave_out']))} saves {saved['positions']:,} "
                   f"positions, {_duration(saved['seconds'])} and {saved['file_bytes'] / gib:.1f} GiB on disk")
    too_big = [row for row in result["layers"] if row["mode"] == "too big"]
    if too_big:
        click.echo(f"layers {too_big[0]['seeds']}.. do not fit: the lean stages hold half a byte a position of a layer "
                   "(their exits streamed, no smaller layer resident); "
                   + ", ".join(f"layer {row['seeds']} needs "
                               f"{min(row['disk_least_bytes'], row['lean_least_bytes']) / gib:.1f} GiB"
                               for row in too_big[:4]))


def _duration(seconds):
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"




@click.command()
@directory_option
@click.option("--full", is_flag=True, hidden=True, help="Read every value back (the default; kept for scripts).")
@click.option("--quick", is_flag=True,
              help="Check headers and layout only, without reading the values ('header ok' instead of 'ok').")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(directory: str | None, full: bool, quick: bool, as_json: bool) -> None:
    """List the tables: sizes, value histograms and check status ('ok': every chunk's CRC read and checked)."""
    from . import tables

    directory = directory or tables.default_directory()
    layers = tables.built_layers(directory)
    rows = interruptible(lambda: [tables.table_info(directory, seeds, full=not quick) for seeds in layers])
    if as_json:
        emit_json({"directory": directory, "layers": rows})
        return
    if not rows:
        click.echo(f"no tables in {directory}; build some with `awele build --max-seeds 16`")
        return
    click.echo(f"tables in {directory}")
    click.echo(f"{'seeds':>5} {'positions':>14} {'MiB':>9} {'B/pos':>6} {'win':>7} {'draw':>7} {'loss':>7}  status")
    for row in rows:
        if row["status"] not in ("ok", "header ok"):
            click.echo(f"{row['seeds']:>5} {row['positions']:>14,} {'':>9} {'':>6} {'':>7} {'':>7} {'':>7}  "
                       f"{row['status']}: {row.get('error', '')}")
            continue
        counts = row["histogram"]
        seeds = row["seeds"]
        wins, draws, losses = sum(counts[seeds + 1 :]), counts[seeds], sum(counts[:seeds])
        total = max(1, row["positions"])
        # Below a chunk of positions a file is mostly its fixed header (2.9 kB): no per-position figure.
        per_position = f"{row['bytes_per_position']:>6.3f}" if row["positions"] >= tables.CHUNK else f"{'-':>6}"
        click.echo(
            f"{seeds:>5} {row['positions']:>14,} {row['bytes'] / 2**20:>9.2f} {per_position} "
            f"{100 * wins / total:>6.1f}% {100 * draws / total:>6.1f}% {100 * losses / total:>6.1f}%  {row['status']}"
        )


@click.command()
@click.option("--seeds", type=click.IntRange(0, 48), default=None, help="Layer to check (default: every layer built).")
@directory_option
@memory_option
@click.option("--sample", type=click.IntRange(1, 10**9), default=None, metavar="N",
              help="Check N positions of each layer drawn at random, a chunk of the file at a time, instead of "
                   "every position: a quick check of a big layer in little memory.")
@click.option("--sample-seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="Seed of the draw for --sample.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(seeds: int | None, directory: str | None, memory: str | None, sample: int | None, sample_seed: int,
           as_json: bool) -> None:
    """Re-check every position of a layer against its moves.

    A layer is held at a byte a position and two bits more, beside its
    smaller layers, or beside a group of them at a time (one pass over the
    layer per group) when they do not all fit in the memory budget. With
    --sample N, N positions drawn at random are checked instead, each value
    read from one checked chunk of its file."""
    from . import build as builder
    from . import tables
    from .layers import LayerStore

    directory = directory or tables.default_directory()
    layers = [seeds] if seeds is not None else tables.built_layers(directory)
    if not layers:
        raise UserError(f"no tables in {directory} to verify")
    budget = memory_budget(memory, builds=False) if memory is not None else None  # verify_groups says what it needs
    store = LayerStore(max(layers)) if sample is None else None
    results = []
    failed = False
    for layer in layers:
        started = time.perf_counter()
        if sample is None:
            count, examples = interruptible(builder.verify, directory, layer, store, 10, budget)
        else:
            count, examples = interruptible(builder.verify_sample, directory, layer, sample, sample_seed)
        seconds = time.perf_counter() - started
        failed = failed or count > 0
        result = {"seeds": layer, "mismatches": count, "examples": examples, "seconds": seconds}
        if sample is not None:
            result.update(sample=sample, sample_seed=sample_seed)
        results.append(result)
        if not as_json:
            status = "ok" if count == 0 else f"{count:,} MISMATCHES"
            drawn = f", {sample:,} positions drawn" if sample is not None else ""
            click.echo(f"layer {layer:2d}: {status}{drawn} ({seconds:.1f} s)")
            for board, value in examples:
                click.echo(f"    mover-view board {board} stored {value}")
    if as_json:
        emit_json({"directory": directory, "layers": results, "ok": not failed})
    if failed:
        raise click.exceptions.Exit(1)
