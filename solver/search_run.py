"""One search's run: iterative deepening of the root, on one thread or split
over several (`SearchRun`), each iteration a call of solver.alphabeta's
kernel or a split of its leftmost line.

Threads: each iteration is split along its leftmost line (PV splitting,
see SearchRun): a node of that line has its first move searched first,
then its other moves side by side, one kernel a move, on the shared
transposition table. solver.search's Searcher makes a run for each search
and reads its result.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time as _time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .alphabeta import (
    EXACT,
    INFINITE,
    LOWER,
    NO_MOVE,
    NO_REPETITION,
    UPPER,
    alpha_beta,
    entry_depth,
    tt_prefer_move,
    tt_store,
)
from .clock import STOP, Clock
from .limits import MAX_PLY
from .position import HOUSE_LETTERS, Position, as_position
from .report import Rule
from .rules import ROW, house_seeds

MAX_HISTORY = 256  # positions before the root that can repeat
UNLIMITED = 1 << 62  # a node budget that is no limit
# Layers that arrive from the background reader during a search restart its
# deepening when they hold at least the root's seeds less this many (a line
# of a move's search captures fewer, most of the time); smaller ones are
# probed from the next iteration on. A judgment, not a measured optimum.
ARRIVAL_REACH = 12
SPLIT_DEPTH = 5  # a node of the leftmost line with this many plies left or more is split over the threads


class SearchRun:
    """Iterative deepening of one search: the path, the PV buffers, the result,
    the stop flag and, with more than one thread, the split search.

    Every kernel of the search reads `control`, the stop flag of its Clock
    (solver.clock: the time limit, stop(), a deepening's earlier deadline).

    Two threads or more split each iteration along its leftmost line (PV
    splitting, Marsland and Popowich): from the root down, every node with
    SPLIT_DEPTH plies or more left has its first move searched first, by the
    same rule; its other moves are then searched side by side, one kernel a
    move, each thread taking the next when free, with the window the moves
    done so far give. A node on the leftmost line has a full window, so
    none of them is cut off, and the moves of one node are all searched
    before its parent goes on. The tree is the one-thread kernel's: a move
    may be searched with a wider window than it would be alone (its elder
    brothers still running), which costs nodes, never a wrong value; an
    exact value is the same on any number of threads, and a bounds search
    (which cuts on proven entries only) gives the same bound. An estimate
    can differ a little, as the entries an estimate may cut on (right after
    a capture) arrive in another order.
    """

    def __init__(self, searcher, position, history, cycles, result, progress, started, threads, end):
        self.searcher = searcher
        self.position = position
        self.path_mover = np.zeros(MAX_HISTORY + MAX_PLY + 2, dtype=np.uint64)
        self.path_opponent = np.zeros_like(self.path_mover)
        self.root = 0
        rule = Rule.parse(cycles)
        if rule is Rule.TRUE and history:
            self.root = _fill_history(self.path_mover, self.path_opponent, history, position)
        self.path_mover[self.root], self.path_opponent[self.root] = position.packed()
        self.split = rule is Rule.SPLIT
        self.until_exact = False  # no limit given: depth, time or nodes
        self.through_tables = False  # table values the true rule could change are searched through (alpha_beta)
        self.true_bounds = None  # solver.repetition.Bounds of the root, when its graph was solved
        self.result = result
        self.progress = progress
        self.started = started
        self.threads = threads
        self.main = _Buffers(self.path_mover, self.path_opponent, searcher.history)  # the searching thread's
        self.pv, self.pv_length = self.main.pv, self.main.pv_length
        self.next_depth = 1
        self.layers_in = searcher.tables.layers_in()  # the layers in memory when the run last looked (bit mask)
        self.houses = []  # principal line of the deepest finished iteration (mover-view houses)
        self.clock = Clock(started, end)  # the stop flag every kernel reads, and its timers
        self.control = self.clock.control
        self._workers: _Workers | None = None  # the other threads of a split search
        self._lock = threading.Lock()  # the split nodes' results and the node count
        self._nodes = 0  # nodes of the split iteration in progress, every thread's
        self.end = end

    def stop(self) -> None:
        """Stop the run: its kernels see the stop flag within STOP_CHECK nodes."""
        self.clock.stop()

    def close(self) -> None:
        """The run is over: its clock's timer goes."""
        self.clock.close()

    def kernel(self, buffers, top, depth, window, since, budget, horizon):
        """The kernel from path[top] on one thread's _Buffers: (score, proven,
        nodes, aborted, on_split, repeat)."""
        searcher = self.searcher
        known: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] = searcher.known_arrays()
        b = buffers
        return alpha_beta(b.path_mover, b.path_opponent, self.root, top, depth, window[0], window[1], since,
                          self.split, searcher.tt, b.history, *known, budget, self.control, b.pv, b.pv_length, horizon,
                          searcher.weights, b.top_moves, searcher.quiescence, self.through_tables)

    def iterate(self, depth: int, budget: int = UNLIMITED, horizon: int = 0) -> tuple[Any, ...]:
        """Search the root to `depth`: (score, proven, nodes, aborted, on_split).
        The kernel alone with one thread or a node budget (so that a node
        limit is reproducible); else split over the threads."""
        if self._workers is None or budget < UNLIMITED:
            whole = (-INFINITE, INFINITE)
            score, proven, nodes, aborted, on_split, _ = self.kernel(self.main, self.root, depth, whole, 0, budget,
                                                                      horizon)
            return score, proven, nodes, aborted, on_split
        self._nodes = 0
        score, proven, aborted, on_split, _ = self._split_node(self.root, depth, (-INFINITE, INFINITE), 0, horizon)
        return score, proven, self._nodes, aborted, on_split

    def _count(self, nodes):
        with self._lock:
            self._nodes += int(nodes)

    def _split_node(self, ply, depth, window, since, horizon):
        """The node at path[ply] of the leftmost line, to `depth` plies within
        `window`, `since` the ply of the line's last capture: (score, proven,
        aborted, on_split, repeat), its line in pv[ply], as the kernel would
        give them."""
        main = self.main
        if depth < SPLIT_DEPTH:
            score, proven, nodes, aborted, on_split, repeat = self.kernel(main, ply, depth, window, since,
                                                                           UNLIMITED, horizon)
            self._count(nodes)
            return score, proven, aborted, on_split, repeat
        # One node of the kernel: the node's score if no move of it needs a
        # search (a game end, a repetition, a table value, a cut, a horizon
        # leaf); else its moves, in the kernel's order, in main.top_moves.
        score, proven, nodes, aborted, on_split, repeat = self.kernel(main, ply, depth, window, since, 1, horizon)
        self._count(nodes)
        if not aborted:
            return score, proven, False, on_split, repeat
        if self.control[STOP] != 0:
            return 0, False, True, False, NO_REPETITION
        moves = _Moves(main.top_moves)
        count = len(moves.houses)
        node = _SplitNode(self, ply, depth, window, since, horizon, moves)
        # The eldest move first, split in turn; then the others side by side.
        self.path_mover[ply + 1], self.path_opponent[ply + 1] = moves.child_mover[0], moves.child_opponent[0]
        captured = int(moves.caps[0])
        child = self._split_node(ply + 1, depth - 1, (captured - window[1], captured - window[0]),
                                 ply + 1 if captured > 0 else since, horizon)
        node.take(0, child, self.pv[ply + 1, : self.pv_length[ply + 1]])
        if count > 1 and not node.done():
            node.search_rest(count, main)
        return node.finish()

    def deepen(self, max_depth: int, node_budget: int, deadline: float | None) -> None:
        """Iterations next_depth..max_depth until proven, the node budget
        (every thread's nodes) or the deadline, on the search's threads."""
        with self.clock.until(deadline) as to_the_end, self.split_threads():
            self._deepen(max_depth, node_budget, deadline, to_the_end)

    def _deepen(self, max_depth, node_budget, deadline, to_the_end):
        """The iterations of deepen(). `to_the_end`: the deadline is the
        search's own end, which stops the kernels: an iteration is then
        started even when the last two predict it cannot finish, and one cut
        short by the end gives the move it found best among the root's moves
        searched to the end (the first is the last iteration's best move, so
        that is a deeper look at it at least). Otherwise (a deadline before
        the end, after which more work follows) no iteration starts that is
        predicted to overrun it."""
        result = self.result
        spent: list[float] = []  # seconds of this deepening's iterations
        tables = self.searcher.tables
        while self.clock.running():
            # Every depth searched unproven while layers are still coming: a
            # search with no limit (until exact) waits for them, and those
            # near the root start it afresh.
            if self.next_depth > max_depth and (result.exact or not self._wait_for_tables(deadline, node_budget)):
                break
            if tables.layers_in() != self.layers_in:
                # Tables arrived from the background reader (since the last
                # iteration, of this deepening or an earlier one of the run).
                # Near the root, a shallow iteration may now prove what the
                # deep ones could not, and entries stored without them would
                # cut it with estimates: start afresh. Far below the root's
                # seeds, the search seldom reaches them: go on deepening
                # (starting over there threw a move's work away whenever a
                # layer came in, for the first tens of seconds of a game).
                arrived = tables.layers_in() & ~self.layers_in
                self.layers_in = tables.layers_in()
                if arrived >> max(0, self.position.seeds - ARRIVAL_REACH):
                    # The move-ordering history learned without them goes
                    # too: it ordered for estimates, and a proof at a
                    # shallow depth needs the moves that reach the tables
                    # first (seen: 811 nodes at depth 22 from an empty
                    # history, 28,394 at depth 35 from one left by a search
                    # without layers 1..12).
                    self.next_depth, spent = 1, []
                    self.searcher.tt[:] = 0
                    self.searcher.history[:] = 0
            if self.next_depth > max_depth:
                break  # what arrived was far below the root
            budget = node_budget - result.nodes
            if budget <= 0:
                break
            if not self.clock.starts_another(spent, deadline, to_the_end):
                break
            iteration = self.next_depth
            tick = _time.perf_counter()
            self._first_at_root()
            self.pv_length[self.root] = 0
            score, proven, used, aborted, on_split = self.iterate(iteration, budget if node_budget < UNLIMITED
                                                                  else UNLIMITED)
            result.nodes += int(used)
            if aborted:
                if to_the_end and self.clock.ended() and self.pv_length[self.root] > 0:
                    self._cut_short(int(score))
                break
            seconds = _time.perf_counter() - tick
            spent.append(seconds)
            self.next_depth = iteration + 1
            result.value = int(score)
            result.exact = bool(proven)
            if not self.split:
                result.rule = Rule.SPLIT if on_split else Rule.TRUE
            result.depth = iteration
            self.houses = [int(h) for h in self.pv[self.root, : self.pv_length[self.root]]]
            result.move = HOUSE_LETTERS[self.position.to_move][self.houses[0]]
            result.iterations.append((iteration, int(score), bool(proven), int(used), seconds))
            if self.progress is not None:
                self.progress(iteration, int(score), bool(proven), result.nodes, _time.perf_counter() - self.started,
                              line_letters(self.position, self.houses))
            if proven:
                break

    def _first_at_root(self):
        """Have the next iteration search the last one's best move first. A cut
        short iteration gives the best of the root moves it searched to the
        end (_cut_short), which is then at least a deeper look at that move:
        were another searched first (the move of a root entry stored deeper,
        or proven in an earlier search with another line above), the end
        could fall while the best move was still searched and give that one,
        however bad (issue 37's missed saves: a move the tables value -9
        played for one valued +9)."""
        if self.houses:
            tt = self.searcher.tt
            tt_prefer_move(tt, np.uint64(tt.shape[0] - 1), self.path_mover[self.root],
                           self.path_opponent[self.root], self.houses[0])

    def _wait_for_tables(self, deadline, node_budget):
        """In a search with no limit (until exact), wait while it is not
        stopped until the background reader has read its layers; whether it
        brought one the run has not seen. Under any limit: False at once."""
        if not self.until_exact or deadline is not None or node_budget < UNLIMITED:
            return False
        tables = self.searcher.tables
        while tables.reading() and self.clock.running():
            tables.wait(0.05)
        return tables.layers_in() != self.layers_in

    def _cut_short(self, score):
        """Take the best root move of an iteration the search's end cut short
        (its value an estimate at that depth; `depth` stays the deepest
        finished iteration's)."""
        result = self.result
        result.value, result.exact = score, False
        self.houses = [int(h) for h in self.pv[self.root, : self.pv_length[self.root]]]
        result.move = HOUSE_LETTERS[self.position.to_move][self.houses[0]]
        result.cut_short = True

    @contextlib.contextmanager
    def split_threads(self) -> Iterator[None]:
        """The other threads of the split search, for the duration of a block."""
        if self.threads > 1:
            self._workers = _Workers(self, self.threads - 1)
        try:
            yield
        finally:
            if self._workers is not None:
                self._workers.close()
                self._workers = None

    def bound(self, horizon: int, depth: int) -> int | None:
        """A proven lower (horizon 1) or upper (horizon -1) bound on the root
        value from a search to `depth` whose horizon leaves are scored as the
        worst or best case for the root's mover; None when stopped first."""
        with self.split_threads():
            score, _, used, aborted, _ = self.iterate(depth, horizon=horizon)
        self.result.nodes += int(used)  # counted, but not an iteration of its own
        return None if aborted else int(score)


class _Buffers:
    """What one thread's kernel writes: its path, its principal lines, the
    moves of a node it stopped in (top_moves) and its history counts (the
    main thread's are the Searcher's; a worker's start as a copy of them:
    counts shared by threads would bounce between their caches at every
    cutoff)."""

    def __init__(self, path_mover, path_opponent, history):
        self.path_mover, self.path_opponent, self.history = path_mover, path_opponent, history
        rows = len(path_mover)
        self.pv = np.zeros((rows, MAX_PLY + 2), dtype=np.int64)
        self.pv_length = np.zeros(rows, dtype=np.int64)
        self.top_moves = np.zeros((ROW + 1, 4), dtype=np.uint64)


class _Moves:
    """A split node's moves in the kernel's order, copied out of top_moves."""

    def __init__(self, top_moves):
        count = int(top_moves[ROW, 0])
        self.houses = top_moves[:count, 0].astype(np.int64)
        self.caps = top_moves[:count, 1].astype(np.int64)
        self.child_mover = top_moves[:count, 2].copy()
        self.child_opponent = top_moves[:count, 3].copy()


class _SplitNode:
    """A node of the leftmost line whose moves after the first are searched
    side by side: its best score so far, how it was found, and the moves
    still to search. Its fields change under the run's lock."""

    def __init__(self, run, ply, depth, window, since, horizon, moves):
        self.run, self.ply, self.depth, self.window, self.since, self.horizon = run, ply, depth, window, since, horizon
        self.moves = moves
        self.best, self.best_move = -INFINITE, NO_MOVE
        self.proven, self.on_split, self.repeat = True, False, NO_REPETITION
        self.aborted = False
        self.cut = False  # a move reached beta (the score is a lower bound resting on it alone)
        self.next = 1  # the next move to hand out
        self.last = 0  # the last move to hand out
        self.back = 0  # moves searched (or skipped) and taken back
        self.finished = threading.Event()  # every move is back

    def done(self):
        return self.aborted or self.cut

    def take(self, i, child, line):
        """The score of move i (the child's (score, proven, aborted, on_split,
        repeat), its line), merged as the kernel merges a child's result."""
        run, ply = self.run, self.ply
        score, proven, aborted, on_split, repeat = child
        if aborted:
            self.aborted = True
            return
        if self.cut:
            return
        value = int(self.moves.caps[i]) - int(score)
        self.repeat = min(self.repeat, int(repeat))
        if value > self.best:
            self.best, self.best_move = value, int(self.moves.houses[i])
            run.pv[ply, 0] = self.best_move
            run.pv[ply, 1 : len(line) + 1] = line
            run.pv_length[ply] = len(line) + 1
        if self.best >= self.window[1]:
            self.cut = True
            self.proven, self.on_split = bool(proven), bool(on_split)
            if self.moves.caps[i] == 0:
                house = int(self.moves.houses[i])
                run.main.history[house, house_seeds(run.path_mover[ply], house)] += self.depth * self.depth
            return
        self.proven = self.proven and bool(proven)
        self.on_split = self.on_split or bool(on_split)

    def search_rest(self, count, main):
        """Moves 1..count-1: the workers and this thread take them one by one;
        returns when all are back."""
        self.last = count - 1
        workers = self.run._workers
        assert workers is not None, "a split node without workers"
        for _ in range(min(workers.count, count - 2)):
            workers.jobs.put(self._work)
        self._work(main)
        self.finished.wait()

    def _work(self, buffers):
        """Search moves of this node with one thread's buffers until none is left."""
        run, ply, moves = self.run, self.ply, self.moves
        path_mover, path_opponent = buffers.path_mover, buffers.path_opponent
        if buffers is not run.main:
            path_mover[: ply + 1] = run.path_mover[: ply + 1]
            path_opponent[: ply + 1] = run.path_opponent[: ply + 1]
        while True:
            with run._lock:
                i = self.next
                if i > self.last:
                    return
                self.next += 1
                skip = self.done()
                low = max(self.window[0], self.best)
            if not skip:
                path_mover[ply + 1], path_opponent[ply + 1] = moves.child_mover[i], moves.child_opponent[i]
                captured = int(moves.caps[i])
                since = ply + 1 if captured > 0 else self.since
                high = self.window[1]
                if high - low > 1:
                    # A null window first, as the kernel does below the first move.
                    child = run.kernel(buffers, ply + 1, self.depth - 1, (captured - low - 1, captured - low), since,
                                        UNLIMITED, self.horizon)
                    with run._lock:
                        run._nodes += int(child[2])
                        value = captured - int(child[0])
                        search_again = not child[3] and low < value < high
                        if search_again:
                            low = max(self.window[0], self.best)
                            search_again = not self.done()
                else:
                    search_again = True
                if search_again:
                    child = run.kernel(buffers, ply + 1, self.depth - 1, (captured - high, captured - low), since,
                                        UNLIMITED, self.horizon)
                    with run._lock:
                        run._nodes += int(child[2])
                score, proven, _, aborted, on_split, repeat = child
                with run._lock:
                    line = buffers.pv[ply + 1, : buffers.pv_length[ply + 1]].copy()
                    self.take(i, (score, proven, aborted, on_split, repeat), line)
            with run._lock:
                self.back += 1
                if self.back == self.last:
                    self.finished.set()

    def finish(self):
        """(score, proven, aborted, on_split, repeat) of the node, stored in
        the transposition table as the kernel stores it."""
        run, ply = self.run, self.ply
        if self.aborted:  # the best of the moves searched to the end, as the kernel gives it
            return self.best if self.best_move != NO_MOVE else 0, False, True, False, NO_REPETITION
        if self.repeat >= ply:
            searcher = run.searcher
            bound = LOWER if self.cut else (EXACT if self.best > self.window[0] else UPPER)
            tt_store(searcher.tt, np.uint64(searcher.tt.shape[0] - 1), run.path_mover[ply], run.path_opponent[ply],
                     self.best, bound, entry_depth(self.proven, self.depth, self.horizon), self.best_move,
                     self.on_split)
        return self.best, self.proven, False, self.on_split, self.repeat


class _Workers:
    """The threads beside the searching one in a split search: each takes jobs
    (a split node's _work) from one queue, with buffers of its own."""

    def __init__(self, run, count):
        self.count = count
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = []
        for _ in range(count):
            buffers = _Buffers(run.path_mover.copy(), run.path_opponent.copy(), run.searcher.history.copy())
            thread = threading.Thread(target=self._serve, args=(buffers,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _serve(self, buffers):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            job(buffers)

    def close(self):
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()


def _fill_history(path_mover, path_opponent, history, position):
    """Lay the history (positions before the root, oldest first) into the path:
    only the positions since the last capture can repeat."""
    seeds = position.seeds
    recent = []
    for earlier in reversed(list(history)):
        earlier = as_position(earlier)
        if earlier.seeds != seeds:
            break
        recent.append(earlier)
    recent = recent[:MAX_HISTORY][::-1]
    for i, earlier in enumerate(recent):
        path_mover[i], path_opponent[i] = earlier.packed()
    return len(recent)


def line_letters(position: Position, houses: Iterable[int]) -> list[str]:
    """Move letters of a line of houses (0..5, mover view) from `position`."""
    letters = []
    for house in houses:
        letters.append(HOUSE_LETTERS[position.to_move][house])
        position = position.play(house)
        if position.is_over():
            break
    return letters


__all__ = ["ARRIVAL_REACH", "MAX_HISTORY", "SPLIT_DEPTH", "UNLIMITED", "SearchRun", "line_letters"]
