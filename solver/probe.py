"""Perfect-play lookup in the endgame tables: values, move values, best moves, lines.

>>> with Tablebase("databases") as tablebase:          # doctest: +SKIP
...     position = Position.from_string("0-0-0-0-1-2/1-0-0-0-0-0 N 20:23")
...     tablebase.value(position), tablebase.best_moves(position)

A value is the seeds the side to move will capture from now on minus those
the other side will capture, under perfect play (RULES.md). Positions whose
opponent houses are all occupied lie outside the index; they are answered by
one ply of lookup. A layer that is not built raises MissingTableError naming
the command that builds it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from types import TracebackType
from typing import Any, cast

import numpy as np
from numba import njit

from . import index, tables
from .errors import (
    CorruptTableError,
    GameOverError,
    InvalidArgumentError,
    InvalidPositionError,
    MissingDistanceError,
    MissingTableError,
    TablebaseClosedError,
)
from .layers import LayerStore, value_packed
from .position import HOUSE_LETTERS, TOTAL_SEEDS, Game, Position, as_position, other_side
from .report import EndReason, MoveValue, Outcome, Rule, best_of, ended_value
from .rules import HOUSES, NOT_TERMINAL, ROW, board_seeds, legal_mask, pack, play

WHOLE_LAYER_LIMIT = 2_000_000  # layers up to this many positions are read whole on first use
CACHE_CHUNKS = 64  # checked chunks kept per open file (64 of 256 Ki positions: 16 MiB)
# A layer loaded whole has its distances read whole too up to this many positions (128 MiB: layers to 21), a byte a
# position beside its values' byte: a table answer then reads no chunk (a layer of 20 seeds has 306 chunks, which a
# reader's 64 cached ones leave answers of 8 ms at the median, 21 ms at most).
DISTANCES_WHOLE_LIMIT = 1 << 27
PROGRESS_BATCH = 256  # positions of the ranking toward leaving a layer expanded between two looks at the clock


@njit(cache=True)
def _values(boards, flat, starts, loaded, out):
    """out[i] = d of boards[i] (mover view); returns the first index that needs
    a layer not loaded, or -1."""
    for i in range(boards.shape[0]):
        mover, opponent = pack(boards[i])
        value = value_packed(mover, opponent, flat, starts, loaded)
        if value == NOT_TERMINAL:
            return i
        out[i] = value
    return -1


class Line:
    """A perfect-play line: moves with their captures, the positions, how it
    ended (an EndReason), the final (South, North) totals, the start's
    distance to conversion, and the layers met that hold no distances (their
    moves chosen by the progress ranking instead)."""

    def __init__(self, start: Position, value: int | None) -> None:
        self.start = start
        self.value = value
        self.moves: list[str] = []
        self.captures: list[int] = []
        self.positions: list[Position] = [start]
        self.end_reason: EndReason | None = None
        self.result: tuple[int, int] | None = None
        # The start's distance to conversion as the first move's cost (None: a value of 0, no
        # distances, or no move played), and the layers whose moves were chosen without distances.
        self.distance: int | None = None
        self.layers_without_distances: list[int] = []

    @property
    def outcome(self) -> Outcome | None:
        """How the line ends as an Outcome (None before it is played)."""
        if self.result is None or self.end_reason is None:
            return None
        return Outcome.ended(self.result, self.end_reason)

    def __len__(self) -> int:
        return len(self.moves)

    def __repr__(self) -> str:
        return f"Line({' '.join(self.moves)!r}, end={self.end_reason!r}, result={self.result})"


class Tablebase:
    """The endgame tables of a folder, opened lazily, usable as a context manager.

    ``directory`` defaults to tables.default_directory(). Small layers are
    read whole on first use; larger ones are read a chunk at a time for single
    probes and whole for :meth:`values`.

    One Tablebase may be shared by any number of threads: value, values,
    moves, move_values, best_moves, line and load give exactly what one
    thread gets. Loads, growing the store and chunk reads hold a lock; a
    look-up reads only layers whose load has completed (a store is never
    changed under a reader: growing it makes a new one). close() is final: a
    probe running when another thread closes the Tablebase, or started after,
    raises TablebaseClosedError.
    """

    def __init__(self, directory: str | os.PathLike | None = None) -> None:
        self.directory = _folder(directory)
        self._readers: dict[int, tables.ChunkReader] = {}
        self._store = LayerStore(0)  # the layers read whole, as the builder holds them
        self._lock = threading.RLock()  # loads, the store's growth
        # The readers have a lock of their own: a single probe (a search's root
        # answered from a big layer's file) never waits for a layer being read whole.
        self._readers_lock = threading.Lock()
        self._closed = False
        # Distances to conversion (solver.distance): small layers' read whole, (bytes, overflow rows);
        # larger ones' read a checked chunk at a time; None for a layer whose file has none.
        self._distances: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}
        self._distance_readers: dict[int, tables.ChunkReader | None] = {}

    def __repr__(self) -> str:
        return f"Tablebase({self.directory!r}, layers={self.layers()}, in_memory={self.loaded_layers()})"

    # Files -----------------------------------------------------------------------

    def __enter__(self) -> Tablebase:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close the open files and drop the loaded layers; probes after this
        (or running in other threads) raise TablebaseClosedError."""
        with self._lock, self._readers_lock:
            self._closed = True
            for reader in self._readers.values():
                reader.close()
            self._readers.clear()
            for distances in self._distance_readers.values():
                if distances is not None:
                    distances.close()
            self._distance_readers.clear()
            self._distances.clear()
            # Replaced, never cleared: a kernel still reading the old store in
            # another thread reads whole layers, and its caller then sees _closed.
            self._store = LayerStore(0)

    def _check_open(self):
        if self._closed:
            raise TablebaseClosedError(f"the tablebase of {self.directory} is closed")

    def layers(self) -> list[int]:
        """Seed counts with a table file in the folder."""
        return tables.built_layers(self.directory)

    def has_layer(self, seeds: int) -> bool:
        """Whether the folder has layer `seeds`' file name (valid or not: a
        damaged file, or a folder under that name, is reported when read)."""
        return os.path.lexists(tables.table_path(self.directory, seeds))

    @property
    def store(self) -> LayerStore:
        """The LayerStore holding the layers read whole (kernels read its arrays())."""
        return self._store

    def warm_up(self) -> None:
        """Load the look-up kernels (compiled, or from numba's cache) now, not
        at the first probe: a search answering from the tables on a clock
        calls this first (see Searcher)."""
        Position.initial().expansion()
        flat, starts, loaded = self._store.arrays()
        _values(np.zeros((0, HOUSES), dtype=np.uint8), flat, starts, loaded, np.empty(0, dtype=np.int8))

    def loaded_layers(self) -> list[int]:
        """Seed counts held in memory, ascending."""
        return self._store.layers()

    def is_loaded(self, seeds: int) -> bool:
        return bool(self._store.loaded[seeds])

    def load(self, seeds: int) -> None:
        """Read layer `seeds` whole into memory (every chunk's CRC and the
        histogram checked).

        Loaded layers share one LayerStore, which the kernels read through
        offsets; it grows to the largest layer present in the folder. A
        layer of at most DISTANCES_WHOLE_LIMIT positions (to 21 seeds) has
        its distances read whole too, a byte a position beside its values'
        byte, so that a table answer finds them in memory and reads no chunk;
        larger layers' distances are read a checked chunk at a time when
        asked for. Damaged distances are reported by the look-ups that need
        them.
        """
        self._loaded_store(seeds)
        if index.layer_size(seeds) <= DISTANCES_WHOLE_LIMIT:
            with suppress(CorruptTableError):
                self._whole_distances(seeds)

    def _loaded_store(self, seeds):
        """The store, holding layer `seeds` (read now if it was not)."""
        with self._lock:
            self._check_open()
            store = self._store
            if store.loaded[seeds]:
                return store
            largest = max([seeds] + self.layers())
            if largest > store.max_seeds:
                # Grown once to the largest layer in the folder, so that later loads
                # fill slots of the same store (a search running on it sees them).
                store = self._store = store.grown(largest)
            # Into the store this thread holds, flagged only once complete:
            # the store cannot change under it while the lock is held.
            tables.load_values(self.directory, seeds, out=store.layer(seeds))
            store.mark_loaded(seeds)
            return store

    def _lookup(self, seeds, rank):
        """d at (layer, rank): from memory, or from one checked chunk of the file."""
        self._check_open()
        store = self._store  # one store for the test and the read: another thread may replace it
        if store.loaded[seeds]:
            return int(store.flat[store.starts[seeds] + rank])
        if index.layer_size(seeds) <= WHOLE_LAYER_LIMIT:
            store = self._loaded_store(seeds)
            return int(store.flat[store.starts[seeds] + rank])
        with self._readers_lock:
            self._check_open()
            reader = self._readers.get(seeds)
            if reader is None:
                reader = self._readers[seeds] = tables.ChunkReader(self.directory, seeds, CACHE_CHUNKS)
        return reader.value(rank)

    def _distance_lookup(self, seeds, rank):
        """The distance at (layer, rank) from checked data: None for a value of
        0; MissingDistanceError when the layer's file holds no distances.
        What the files leave out (solver.distance.for_file) comes from the
        value: None for 0, 1 for a value above 0, and for one below 0 one ply:
        1 + the greatest distance of the quiet moves' children that keep the
        value (ahead, so stored or 1), 1 when only a capture keeps it."""
        from .distance import DERIVE

        found = self._stored_distance(seeds, rank)
        value = self._lookup(seeds, rank)
        if found != DERIVE:
            if value == 0 or (value < 0 and found != 0):
                raise CorruptTableError(f"layer {seeds} in {self.directory}: rank {rank}, worth {value}, "
                                        f"stores a distance of {found}")
            return found
        if value <= 0:
            if value == 0:
                return None
            expansion = index.expand(index.unrank(seeds, rank))
            return max(1 if captured else 1 + self._ahead_distance(seeds, int(expansion.child_ranks[house]))
                       for house, captured, move_value in self._move_values(expansion) if move_value == value)
        return 1

    def _ahead_distance(self, seeds, rank):
        """The distance of a position whose value is above 0 (its stored one, or 1)."""
        from .distance import DERIVE

        found = self._stored_distance(seeds, rank)
        return 1 if found == DERIVE else found

    def _stored_distance(self, seeds, rank):
        """The distance at (layer, rank) as its file stores it (distance_at)."""
        from .distance import DISTANCE_CAP, distance_at

        self._check_open()
        if seeds in self._distances or index.layer_size(seeds) <= WHOLE_LAYER_LIMIT:
            held = self._whole_distances(seeds)
            if held is None:
                raise MissingDistanceError(f"layer {seeds} in {self.directory} has no distances: add them with "
                                           f"`{tables.build_command(seeds, self.directory)}`")
            return distance_at(held[0], held[1], rank, DISTANCE_CAP)
        with self._readers_lock:
            self._check_open()
            if seeds not in self._distance_readers:
                try:
                    self._distance_readers[seeds] = tables.ChunkReader(self.directory, seeds, CACHE_CHUNKS,
                                                                       distances=True)
                except MissingDistanceError:
                    self._distance_readers[seeds] = None
            reader = self._distance_readers[seeds]
        if reader is None:
            raise MissingDistanceError(f"layer {seeds} in {self.directory} has no distances: add them with "
                                       f"`{tables.build_command(seeds, self.directory)}`")
        assert reader.overflow is not None, "a distance reader holds the overflow rows"
        return distance_at(reader.chunk(rank // tables.CHUNK), reader.overflow, rank, DISTANCE_CAP, rank % tables.CHUNK)

    def _whole_distances(self, seeds):
        """Layer `seeds`' distance bytes and overflow rows read whole (once),
        or None when its file holds none."""
        with self._lock:
            self._check_open()
            if seeds not in self._distances:
                try:
                    self._distances[seeds] = tables.load_distances(self.directory, seeds)
                except MissingDistanceError:
                    self._distances[seeds] = None
            return self._distances[seeds]

    def distance(self, position: Position | str) -> int | None:
        """Plies to the next capture or end of the game from `position` when
        the side ahead converts as fast as it can and the side behind holds
        out as long as it can, neither giving up any value (solver.distance);
        None when the value is 0. Raises MissingDistanceError when the layer
        holds values alone, MissingTableError when it is not built, and
        GameOverError as value() does.

        A position outside the index (all opponent houses occupied) is
        answered by one ply: the best cost over the moves that keep its value.
        """
        position = as_position(position)
        _refuse_finished(position)
        expansion = position.expansion()
        value = self._expanded_value(expansion)
        if value == 0:
            return None
        if expansion.terminal != NOT_TERMINAL:
            return 0
        if expansion.rank >= 0:
            found = self._distance_lookup(int(expansion.seeds), int(expansion.rank))
        else:
            costs = [self._move_distance(expansion, house, captured)
                     for house, captured, move_value in self._move_values(expansion) if move_value == value]
            found = min(costs) if value > 0 else max(costs)  # a keeping move's child has a value other than 0
        self._check_open()
        return found

    def _holds_distances(self, seeds):
        """Whether layer `seeds`' file holds distances (a capture's cost of 1
        is given only where it does, as every other)."""
        try:
            self._stored_distance(seeds, 0)
        except MissingDistanceError:
            return False
        return True

    def _move_distance(self, expansion, house, captured):
        """The cost of a move (1 for a capture, else 1 + the child's distance)."""
        if captured:
            return 1
        child = self._distance_lookup(int(expansion.seeds), int(expansion.child_ranks[house]))
        return None if child is None else 1 + child

    # Values ----------------------------------------------------------------------

    def _move_values(self, expansion, known=None):
        """[(house, seeds captured, value)] of the legal moves of an expanded
        board (index.expand), value = captured - d(child); `known` holds
        child values already looked up, by (layer, rank)."""
        mask, seeds, captured, child_ranks = expansion.legal, expansion.seeds, expansion.captured, expansion.child_ranks
        moves = []
        for house in range(ROW):
            if mask & (1 << house):
                taken = int(captured[house])
                key = (int(seeds) - taken, int(child_ranks[house]))
                child = known[key] if known is not None else self._lookup(*key)
                moves.append((house, taken, taken - child))
        return moves

    def _expanded_value(self, expansion):
        if expansion.terminal != NOT_TERMINAL:
            return int(expansion.terminal)
        if expansion.rank >= 0:
            return self._lookup(int(expansion.seeds), int(expansion.rank))
        return max(value for _, _, value in self._move_values(expansion))

    def get(self, position: Position | str, default: Any = None) -> Any:
        """The value of `position`, or `default` when a layer it needs is not built."""
        try:
            return self.value(position)
        except MissingTableError:
            return default

    def value(self, position: Position | str) -> int:
        """d for the side to move: seeds it will capture from now on minus the other side's.

        Raises MissingTableError when a needed layer is not built, and
        GameOverError (with the final score) for a position where the game is
        already over by 25 seeds or 24-24: each side takes the seeds on its
        own side, whatever the board's table entry says. A position ended by
        rule 5 or 6 has its terminal value.
        """
        position = as_position(position)
        _refuse_finished(position)
        value = self._expanded_value(position.expansion())
        self._check_open()
        return value

    def move_values(self, position: Position | str) -> dict[str, int]:
        """{move letter: value of the position for the mover after that move}.

        A move's value is the seeds it captures minus the child's value.
        """
        return {m.move: cast(int, m.value) for m in self.moves(position)}  # the tables' values are exact

    def moves(self, position: Position | str, distances: bool = True) -> list[MoveValue]:
        """Every legal move as a MoveValue (letter, seeds captured, exact value
        under the tables' convention, the outcome it leads to under perfect
        play, or how it ends the game, and its distance to conversion), in
        sowing order. With `distances` False no distance is looked up (each
        can cost a chunk of a file): every move's is None."""
        position = as_position(position)
        if position.is_over():
            return []
        expansion = position.expansion()
        moves = self._records(position, expansion)
        if distances:
            with suppress(MissingDistanceError):  # values alone: no move has a distance
                moves = self._with_distances(expansion, moves, moves)
        self._check_open()
        return moves

    def _records(self, position, expansion):
        """The MoveValue of every legal move of `position` (not over), without distances."""
        letters = HOUSE_LETTERS[position.to_move]
        mine, theirs = position.mover_captured()
        moves = []
        for house, captured, value in self._move_values(expansion):
            ended = None
            if mine + captured > TOTAL_SEEDS // 2 or mine + captured == theirs == TOTAL_SEEDS // 2:
                # The move ends the game by 25 seeds or 24-24: each side takes its own side's seeds.
                child = position.play(house)
                result, reason = child.result(), child.terminal_rule()
                assert result is not None and reason is not None, "the move ends the game"
                ended = Outcome.ended(result, reason)
            moves.append(MoveValue.of(position, letters[house], captured, value, outcome=ended))
        return moves

    def _with_distances(self, expansion, moves, chosen):
        """`moves` with the distance of each of those in `chosen` whose value
        is not 0 and whose rule is the tables' (a move that ends the game by
        the true rule keeps None) looked up. Raises MissingDistanceError when
        one is needed and the layer holds values alone."""
        wanted = {id(m) for m in chosen if m.value != 0 and m.rule is Rule.SPLIT}
        if wanted and not self._holds_distances(int(expansion.seeds)):
            raise MissingDistanceError(f"layer {int(expansion.seeds)} in {self.directory} has no distances")
        out = []
        for m in moves:
            if id(m) in wanted:
                house = "ABCDEF".index(m.move.upper())
                m = replace(m, distance=self._move_distance(expansion, house, m.captured))
            out.append(m)
        return out

    def best_moves(self, position: Position | str) -> list[str]:
        """The letters of the moves that keep the position's value (the tables' convention)."""
        return [m.move for m in best_of(self.moves(position))]

    def game_moves(self, game: Game | Position | str, distances: bool = True) -> list[MoveValue]:
        """Every legal move of the game's position with the true repetition
        rule over the game: a move that ends the game, by repeating a position
        of the game (`repeats`: each side takes the seeds on its own side) or
        by 25 seeds or 24-24, is worth what that end gives (rule "true"); every
        other move is worth its table value (the tables' convention), with its
        distance unless `distances` is False (see moves). Raises
        MissingTableError when a layer is missing."""
        game = game if isinstance(game, Game) else Game(as_position(game))
        if game.is_over():
            return []
        position = game.position
        seen = {p.key() for p in game.positions}
        moves = []
        for m in self.moves(position, distances):
            repeats = position.play(m.move).key() in seen
            if repeats or (m.outcome is not None and m.outcome.reason is not None):
                game.play(m.move)
                try:
                    result = game.result()
                    assert result is not None and game.end_reason is not None, "the move ended the game"
                    value = ended_value(result, position)
                    ended = Outcome.ended(result, game.end_reason)
                finally:
                    game.undo()
                m = MoveValue.of(position, m.move, m.captured, value, rule=Rule.TRUE, repeats=repeats, outcome=ended)
            moves.append(m)
        return moves

    def best_move(self, game: Game | Position | str, progress: bool = True,
                  deadline: float | None = None) -> MoveValue | None:
        """Perfect play's move in the game's position under the true
        repetition rule over the game (game_moves), as a MoveValue.

        Among the moves of the best value v, by distance to conversion
        (solver.distance; the record carries it): with v > 0 the least cost,
        with v < 0 the greatest, where a move that captures or ends the game
        costs 1 and any other 1 + the distance of the position it leads to.
        So a won game is won without circling, converting as fast as it can,
        and a lost one is held out as long as it can. Among equal costs a
        capture, then a move that repeats no position of the game, then the
        first in sowing order. With v = 0 (no distance) a capture, then a
        move that keeps the game going.

        Where the layer holds values alone (built with --no-distance), the
        choice is the one made without distances: a capture first; a winner
        then takes a repetition worth the best value, else with several quiet
        best moves plays toward leaving the layer by the progress ranking of
        Tablebase.line (Python, which `deadline`, a time.perf_counter()
        value, bounds); a loser prefers a move that keeps the game going.

        With `progress` False the choice among several quiet best moves of a
        won position is left to the caller (None is returned), as it was
        when only the ranking made it. Raises GameOverError when the game is
        over and MissingTableError when a layer is missing.
        """
        game = game if isinstance(game, Game) else Game(as_position(game))
        if game.is_over():
            raise GameOverError(f"the game is over ({game.end_reason})")
        candidates = best_of(self.game_moves(game, distances=False))  # distances below: only the best's
        value = cast(int, candidates[0].value)  # the tables' values are exact
        if value != 0:
            try:
                costed = self._with_distances(game.position.expansion(), candidates, candidates)
            except MissingDistanceError:
                pass  # values alone: the choice made without distances, below
            else:
                if not progress and _quiet_choice(candidates):
                    return None
                costs = [_cost(m) for m in costed]
                chosen = _fastest(value, costs, [m.captured for m in costed], lambda i: not costed[i].repeats)
                self._check_open()
                return costed[chosen]
        return self._best_without_distances(game, candidates, progress, deadline)

    def _best_without_distances(self, game, candidates, progress, deadline):
        """best_move's choice among `candidates` (game_moves' best) where the
        value is 0 or the layer holds no distances."""
        capturing = [m for m in candidates if m.captured > 0]
        if capturing:
            return capturing[0]
        if cast(int, candidates[0].value) > 0:  # the tables' values are exact
            # A repetition worth the best value wins it now, exactly.
            ending = [m for m in candidates if m.repeats]
            if ending:
                return ending[0]
            if len(candidates) > 1:
                if not progress:
                    return None
                chosen = self.line(game.position, max_plies=1, deadline=deadline).moves[0]
                return next((m for m in candidates if m.move == chosen), candidates[0])
            return candidates[0]
        # No progress to make: a loser or a drawer prefers to keep the game going.
        fresh = [m for m in candidates if not m.repeats]
        return (fresh or candidates)[0]

    def values(self, boards: np.ndarray) -> np.ndarray:
        """Vectorised d of an (N, 12) uint8 array of mover-view boards -> int8 array.

        Every layer needed is read whole into memory.
        """
        given = np.asarray(boards)
        if given.dtype.kind not in "iu" or given.ndim != 2 or given.shape[1] != HOUSES:
            raise InvalidPositionError(
                f"boards must be an (N, 12) array of integers, got shape {given.shape} of {given.dtype}")
        if given.size and (given.min() < 0 or given.max() > index.MAX_SEEDS):
            raise InvalidPositionError(f"house counts must be 0..{index.MAX_SEEDS}")
        if given.shape[0] and given.sum(axis=1, dtype=np.int64).max() > index.MAX_SEEDS:
            raise InvalidPositionError("a board holds more than 48 seeds")
        boards = np.ascontiguousarray(given, dtype=np.uint8)
        out = np.empty(boards.shape[0], dtype=np.int8)
        while True:
            self._check_open()
            flat, starts, loaded = self._store.arrays()
            stuck = _values(boards, flat, starts, loaded, out)
            if stuck < 0:
                self._check_open()
                return out
            self._load_for(boards[stuck])

    def _load_for(self, board):
        """Load the layers a board needs (its own, or its children's when outside the index)."""
        mover, opponent = (np.uint64(word) for word in pack(board))  # as the kernels type them (not int64)
        seeds = int(board_seeds(mover, opponent))
        needed = {seeds}
        if not index.packed_in_index(opponent):
            mask = legal_mask(mover, opponent)
            needed = {seeds - int(play(mover, opponent, h)[0]) for h in range(ROW) if mask & (1 << h)}
        for layer in sorted(needed):
            if not self.has_layer(layer):
                raise MissingTableError(
                    f"layer {layer} is not built in {self.directory}: "
                    f"build it with `{tables.build_command(layer, self.directory)}`"
                )
            self.load(layer)

    # Lines -----------------------------------------------------------------------

    def _best_edges(self, boards):
        """{board: (value, [(house, captured, child board)] of its best moves)}
        for mover-view boards (tuples of 12 ints); value None and no moves
        for a board where the game is over. The children's values are looked
        up in (layer, rank) order, so that a chunk of a file is read once for
        all the boards."""
        expansions = [index.expand(np.array(board, dtype=np.uint8)) for board in boards]
        keys = sorted({(int(e.seeds) - int(e.captured[h]), int(e.child_ranks[h]))
                       for e in expansions for h in range(ROW) if e.legal & (1 << h)})
        known = {key: self._lookup(*key) for key in keys}
        edges: dict[tuple[int, ...], tuple[int | None, list[tuple[int, int, tuple[int, ...]]]]] = {}
        for board, expansion in zip(boards, expansions):
            moves = self._move_values(expansion, known)
            if not moves:
                edges[board] = (None, [])
                continue
            best = max(value for _, _, value in moves)
            children = expansion.children
            edges[board] = (best, [(house, captured, tuple(int(x) for x in children[house]))
                                   for house, captured, value in moves if value == best])
        return edges

    def _progress(self, board, limit=200_000, deadline=None):
        """Attractor ranks toward leaving the layer, for the side winning `board`.

        In a won position (d > 0) perfect play must still make progress: a
        best move can lead round a cycle of best moves forever. Over the graph
        of best moves reachable from `board` without captures, rank 0 is a
        position where the winner's best move captures (leaves the layer) or
        the loser's every best move does; a winner's position gets 1 + the
        smallest rank of its best children, a loser's 1 + the largest. The
        winner then plays toward the smallest rank.

        The graph is explored a ply at a time (breadth first) and ranked as
        far as it is explored, a position not yet explored counting as never
        ranked. A rank found that way is an upper bound, and exact for a
        position t plies from `board` whose rank is at most R - t when every
        position within R plies is explored: all its rank rests on is. So
        exploring stops once `board` has a rank no larger than R. Its rank
        is then exact, so are its best children's at rank - 1 (the others'
        are larger), and so is the rank of every position a line following
        the ranks then meets. Only the positions within rank(board) plies or
        so are looked up, not the whole graph of best moves, which in a large
        layer read a chunk at a time takes minutes. Returns {board: rank} of
        the ranked positions, or None when more than `limit` positions would
        be explored or the clock passes `deadline` (time.perf_counter()).
        """
        root = tuple(int(x) for x in board)
        value, _ = self._best_edges([root])[root]
        if value is None or value <= 0:
            return None
        # board -> (winner to move, best edges)
        nodes: dict[tuple[int, ...], tuple[bool, list[tuple[int, int, tuple[int, ...]]]]] = {}
        level = {root: True}
        radius = -1  # every position within `radius` plies of the root is explored
        ranked_at = 0
        again_at = None  # the radius at which to rank again: the root's rank so far
        def past_deadline():
            return deadline is not None and time.perf_counter() > deadline

        while level:
            if len(nodes) + len(level) > limit or past_deadline():
                return None
            boards = list(level)
            for start in range(0, len(boards), PROGRESS_BATCH):  # a few ms each: the deadline is looked at between
                if start and past_deadline():
                    return None
                for node, (_, edges) in self._best_edges(boards[start:start + PROGRESS_BATCH]).items():
                    nodes[node] = (level[node], edges)
            following = {}
            for node in level:
                winner, edges = nodes[node]
                for _, captured, child in edges:
                    if captured == 0 and child not in nodes:
                        following[child] = not winner
            level = following
            radius += 1
            # Ranking is a pass over what is explored: done each time that has
            # grown by a tenth until the root is ranked, then when the radius
            # reaches its rank (which can only fall as more is explored).
            if again_at is not None:
                due = radius >= again_at
            else:
                due = len(nodes) >= 1.1 * ranked_at
            if due or not level:
                if past_deadline():  # a pass over every position explored: tens of ms when they are many
                    return None
                ranked_at = len(nodes)
                rank = _attractor(nodes)
                if root in rank:
                    if rank[root] <= radius or not level:
                        return rank
                    again_at = rank[root]
        return rank

    def line(self, position: Position | str, max_plies: int = 200, deadline: float | None = None) -> Line:
        """The perfect-play line from `position` as a Line.

        Both sides play best moves (the tables' convention), chosen by
        distance to conversion as best_move chooses (solver.distance): with a
        value v > 0 the move of least cost, with v < 0 the one of greatest
        cost, so that a line from a position with v != 0 reaches its next
        capture (or the end) in exactly the position's distance and then
        goes on in the smaller layer. With v = 0 a capture, then a position
        not yet met, is preferred. The line ends by the rules: rules 5 and 6,
        25 seeds, 24-24, or the true repetition rule (a position met a
        second time ends the game, each side taking the seeds on its own
        side), or after max_plies.

        In a layer with values alone (no distances: Line.layers_without_distances
        names them) the winner plays toward leaving the layer by the ranking
        of _progress, and the loser prefers a capture, then a new position.

        `deadline` (time.perf_counter()) bounds the time spent: past it the
        line ends after the move being chosen (PLY_LIMIT), and the ranking
        of a layer without distances is given up (the winner's choice is
        then a capture, else a position not yet met, else the first best
        move).
        """
        if isinstance(max_plies, bool) or not isinstance(max_plies, (int, np.integer)) or max_plies < 0:
            raise InvalidArgumentError(f"max_plies must be an integer 0 or more, got {max_plies!r}")
        if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                     or deadline != deadline):
            raise InvalidArgumentError(f"deadline must be a time.perf_counter() value or None, got {deadline!r}")
        position = as_position(position)
        if position.is_over():
            line = Line(position, None)
            line.end_reason = position.terminal_rule()
            line.result = position.result()
            return line
        line = Line(position, self.value(position))
        game = Game(position)
        seen = {position.key()}
        progress = None
        progress_side = None
        while not game.is_over() and len(line.moves) < max_plies:
            if line.moves and deadline is not None and time.perf_counter() > deadline:
                break
            current = game.position
            expansion = current.expansion()
            moves = self._move_values(expansion)
            best = max(value for _, _, value in moves)
            candidates = [(house, captured) for house, captured, value in moves if value == best]
            costs = None
            if best != 0:
                if self._holds_distances(current.seeds):
                    costs = [self._move_distance(expansion, house, captured) for house, captured in candidates]
                elif current.seeds not in line.layers_without_distances:
                    line.layers_without_distances.append(current.seeds)
            letters = HOUSE_LETTERS[current.to_move]
            if costs is not None:
                # A move chosen this way repeats no position of the line (so no look at `seen`): a
                # quiet best move keeps the layer and the value's size, so the line's positions in
                # this layer lie on one stretch from its first, along which the distance falls a ply
                # at a time.
                chosen = _fastest(best, costs, [captured for _, captured in candidates], lambda i: True)
                if not line.moves:
                    line.distance = costs[chosen]
                move = letters[candidates[chosen][0]]
            else:
                board = tuple(int(x) for x in current.mover_board())
                if best > 0 and (progress is None or board not in progress or progress_side != current.to_move):
                    progress = self._progress(board, deadline=deadline)
                    progress_side = current.to_move
                move = letters[_preferred(expansion, current.to_move, candidates, progress if best > 0 else None, seen)]
            captured = game.play(move)
            if captured:
                progress = None
            seen.add(game.position.key())
            line.moves.append(move)
            line.captures.append(captured)
            line.positions.append(game.position)
        line.end_reason = game.end_reason or EndReason.PLY_LIMIT
        line.result = game.result()
        self._check_open()
        return line

    def predicted_result(self, position: Position | str) -> tuple[float, float]:
        """Final (South, North) seed totals the value predicts: captured so far
        plus (n + d) / 2 for the mover (a half seed only from endless play)."""
        position = as_position(position)
        if position.is_over():
            result = position.result()
            assert result is not None, "the game is over"
            return result
        return Outcome.predicted(position, self.value(position)).totals


def _folder(directory):
    """The tables folder a Tablebase is opened on, as a str (None or "": the default)."""
    if directory is None or (isinstance(directory, str) and not directory):
        return tables.default_directory()
    if isinstance(directory, os.PathLike):
        directory = os.fspath(directory)
    if not isinstance(directory, str):
        raise InvalidArgumentError(f"the tables folder must be a str or an os.PathLike naming it, "
                                   f"got {type(directory).__name__} {directory!r}"[:200])
    return directory


def _attractor(nodes):
    """{board: rank} over explored best-move graph `nodes` ({board: (winner to
    move, [(house, captured, child)])}, see Tablebase._progress); a child not
    in `nodes` is never ranked."""
    parents: dict[tuple[int, ...], list[tuple[int, ...]]] = {node: [] for node in nodes}
    waiting = {}
    rank = {}
    frontier = []
    for node, (winner, edges) in nodes.items():
        inner = [child for _, captured, child in edges if captured == 0]
        for child in inner:
            if child in parents:
                parents[child].append(node)
        if (winner and (len(inner) < len(edges) or not edges)) or (not winner and not inner):
            rank[node] = 0
            frontier.append(node)
        waiting[node] = len(inner)
    while frontier:
        following = []
        for child in frontier:
            for parent in parents[child]:
                if parent in rank:
                    continue
                winner = nodes[parent][0]
                waiting[parent] -= 1
                if winner or waiting[parent] == 0:
                    rank[parent] = rank[child] + 1
                    following.append(parent)
        frontier = following
    return rank


def _cost(move: MoveValue) -> int | None:
    """A best move's cost in plies to conversion: 1 when it captures or ends
    the game (by the true rule too), else its distance (None: not looked up)."""
    if move.captured or move.rule is Rule.TRUE:
        return 1
    return move.distance


def _fastest(value: int, costs: list, captured: list[int], fresh: Callable[[int], bool]) -> int:
    """The index of the move perfect play chooses among moves of one value
    `value` != 0 with these costs: the least with value > 0, the greatest
    with value < 0; among equal costs a capture, then a move `fresh` says
    repeats no position, then the first (sowing order)."""
    target = min(costs) if value > 0 else max(costs)
    tied = [i for i, cost in enumerate(costs) if cost == target]
    if len(tied) > 1:
        tied = [i for i in tied if captured[i]] or tied
    if len(tied) > 1:
        tied = [i for i in tied if fresh(i)] or tied
    return tied[0]


def _quiet_choice(candidates: list[MoveValue]) -> bool:
    """Whether a won position's best moves leave a choice among several quiet
    ones (no capture, no repetition ending the game): what best_move with
    `progress` False leaves to its caller."""
    return (cast(int, candidates[0].value) > 0 and len(candidates) > 1
            and not any(m.captured or m.repeats for m in candidates))


def _preferred(expansion, to_move, candidates, progress, seen):
    """The house chosen among `candidates` ([(house, captured)] of an
    expanded board whose mover is `to_move`) without distances: a capture or
    an end of the game, then (a winner, `progress` being its ranking) the
    child of least rank, then a position not in `seen` (keys), then the
    first."""
    south = other_side(to_move) == "S"

    def preference(candidate):
        house, captured = candidate
        child_board = tuple(expansion.children[house].tolist())
        ends = captured > 0 or index.expand(expansion.children[house]).legal == 0  # rules 5 and 6
        if progress is not None and captured == 0:
            rank = -progress.get(child_board, len(progress) + 1)
        else:
            rank = 0
        key = (child_board if south else child_board[6:] + child_board[:6], "S" if south else "N")
        return (ends, rank, key not in seen)

    return max(candidates, key=preference)[0]

def _refuse_finished(position):
    # Rules 5 and 6 end the game with the seeds going where the terminal value
    # says; a 25-seed win or 24-24 ends it with each side taking its own
    # seeds, which the board's table value does not describe.
    if position.terminal_rule() in (EndReason.WINNING_SEEDS, EndReason.EVEN_SPLIT):
        south, north = position.result()
        raise GameOverError(f"the game is over in {position} ({position.terminal_rule()}): "
                            f"final score South {south}, North {north}")


__all__ = ["HOUSE_LETTERS", "Line", "MoveValue", "Tablebase"]
