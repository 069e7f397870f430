"""Limits shared by the command line and the API, in a module that imports
nothing, so that the command line can state them in its options without
loading the kernels (`awele --help` stays quick)."""

MAX_SEEDS = 48  # seeds in the game
MAX_PLY = 120  # deepest search iteration; the search's stack has room for this plus the history
MAX_PERFT_DEPTH = 40  # perft's kernel recurses once a ply; deeper counts would take years anyway
DEFAULT_QUIESCENCE = 0  # plies beyond the horizon in which a search still tries captures
MAX_QUIESCENCE = 16
