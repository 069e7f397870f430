"""Where the tables live by default, in a module that imports neither numba
nor h5py, so that a command can name the folder before it loads the kernels
(`awele uci` answers `uci` with its Tables option at once)."""

from __future__ import annotations

import os

DEFAULT_DIRECTORY = "databases"
ENVIRONMENT_VARIABLE = "AWELE_DATABASES"


def default_directory() -> str:
    """The tables folder, whatever the current folder is: $AWELE_DATABASES; else
    the checkout's databases/ for a development install (pip install -e);
    else the user's data folder (platformdirs: ~/.local/share/awele on Linux)."""
    chosen = os.environ.get(ENVIRONMENT_VARIABLE)
    if chosen:
        return chosen
    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if (os.path.isfile(os.path.join(checkout, "pyproject.toml"))
            and os.path.isdir(os.path.join(checkout, DEFAULT_DIRECTORY))):
        return os.path.join(checkout, DEFAULT_DIRECTORY)
    import platformdirs

    return platformdirs.user_data_dir("awele", appauthor=False)
