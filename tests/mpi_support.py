"""What the tests under mpiexec need: the launcher, and whether a distributed build can run here."""

import shutil

MPIEXEC = shutil.which("mpiexec")


def mpi_ready() -> bool:
    """Whether mpiexec and mpi4py (the mpi extra) are both here."""
    if MPIEXEC is None:
        return False
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True
