"""Limits shared by the command line and the API, in a module that imports
nothing, so that the command line can state them in its options without
loading the kernels (`awele --help` stays quick)."""

MAX_SEEDS = 48  # seeds in the game
MAX_PLY = 120  # deepest search iteration; the search's stack has room for this plus the history
MAX_PERFT_DEPTH = 40  # perft's kernel recurses once a ply; deeper counts would take years anyway
DEFAULT_QUIESCENCE = 0  # plies beyond the horizon in which a search still tries captures
MAX_QUIESCENCE = 16
MAX_FIT_GAMES = 1_000_000  # playouts of a fit: each keeps up to 300 boards of 12 bytes (3.6 GB at this many)
MAX_FIT_PER_LAYER = 100_000_000  # positions valued a layer (the largest layers built have billions)
MAX_FIT_SEED = 2**32 - 1  # the playouts' random seed (numba's np.random.seed takes 32 bits)
