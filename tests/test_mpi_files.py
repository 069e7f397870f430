"""Under mpiexec (marked mpi): a distributed build's folders and signals. A
bad folder is said once, not once a process; a second job on a folder is
refused before it builds; Ctrl-C at the launcher ends a job even when one
of its processes was stopped (SIGSTOP), and the next build removes what the
job left."""

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest
from mpi_support import MPIEXEC, mpi_ready

from solver import build, tables

pytestmark = [pytest.mark.mpi, pytest.mark.skipif(not mpi_ready(), reason="needs mpiexec and mpi4py (awele[mpi])")]


def _build(processes, *options, timeout=300):
    return subprocess.run([MPIEXEC, "-n", str(processes), sys.executable, "-m", "solver", "build", "--quiet",
                           "--threads", "1", *options], capture_output=True, text=True, timeout=timeout)


def _said(result):
    return [line for line in result.stderr.splitlines() if line.startswith("awele:")]


@pytest.mark.parametrize("option", ["--dir", "--checkpoint-dir"])
def test_mpi_a_folder_that_is_a_file_is_said_once(tmp_path, option):
    (tmp_path / "file").write_text("not a folder")
    options = [option, str(tmp_path / "file")] + (["--dir", str(tmp_path / "tables")] if option != "--dir" else [])
    result = _build(3, "--max-seeds", "3", *options)
    assert result.returncode == 2
    assert len(_said(result)) == 1 and "is a file" in _said(result)[0], result.stderr
    assert not os.path.exists(tmp_path / "tables")


def test_mpi_a_second_job_on_a_folder_is_refused_before_it_builds(tmp_path):
    directory = str(tmp_path)
    with build.BuildLock(directory):  # the first job
        result = _build(2, "--max-seeds", "6", "--dir", directory)
    assert result.returncode == 2
    assert len(_said(result)) == 1 and "another awele build is running" in _said(result)[0], result.stderr
    assert tables.built_layers(directory) == []


def _children(parent):
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                found.append(int(name))
    return found


def _ranks(launcher):
    """{rank: pid} of the processes mpiexec `launcher` started (through its proxies)."""
    found = {}
    for proxy in _children(launcher):
        for pid in _children(proxy):
            try:
                with open(f"/proc/{pid}/environ", "rb") as handle:
                    variables = dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)
            except OSError:
                continue
            if variables.get(b"PMI_RANK", b"").isdigit():
                found[int(variables[b"PMI_RANK"])] = pid
    return found


def test_mpi_ctrl_c_ends_a_job_one_of_whose_processes_is_stopped(tmp_path):
    directory = str(tmp_path)
    job = subprocess.Popen([MPIEXEC, "-n", "2", sys.executable, "-m", "solver", "build", "--max-seeds", "16",
                            "--dir", directory, "--quiet", "--threads", "1"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    ranks = {}
    try:
        started = time.monotonic()
        while not os.path.exists(tables.table_path(directory, 12)) and time.monotonic() - started < 240:
            assert job.poll() is None, job.stderr.read() if job.stderr else ""
            time.sleep(0.05)
        ranks = _ranks(job.pid)
        assert sorted(ranks) == [0, 1]
        os.kill(ranks[1], signal.SIGSTOP)
        time.sleep(1.5)  # process 0 is waiting for it inside MPI by now
        job.send_signal(signal.SIGINT)
        job.communicate(timeout=60)  # hung for good before: process 0 never left MPI to hear the signal
        assert job.returncode != 0
    finally:
        if job.poll() is None:  # the job hung: end it, and its processes, which run in sessions of their own
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
            for pid in ranks.values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    # The next build removes what the job may have left half-written, and goes on from the layers it wrote.
    build.build(13, directory)
    assert not [name for name in os.listdir(directory) if tables.TEMPORARY_SUFFIX + "-" in name]
    for seeds in range(14):
        assert tables.table_info(directory, seeds, full=True)["status"] == "ok"
