"""Alpha-beta above the tables: exactness against the tables and a naive
reference, the repetition conventions, limits, the CLI."""

import json
import random
import subprocess
import sys
import threading

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive_search import TooLarge, naive_estimate, naive_search_value
from naive_solver import naive_value

from solver import Position, evaluation, index, search_run
from solver import search as search_module
from solver.alphabeta import INFINITE, tt_probe, tt_store, tt_unpack
from solver.cli import cli
from solver.engine import Engine
from solver.errors import GameOverError, MissingTableError, TablebaseClosedError
from solver.position import HOUSE_LETTERS, Game
from solver.probe import Tablebase
from solver.report import move_rows
from solver.search import MAX_PLY, Searcher, SearchError, SearchResult, search
from solver.search_run import SearchRun
from solver.table_reader import TableReader

EVERY_POSITION_LAYERS = (2, 3, 4, 5, 6)


def layer_positions(seeds):
    """Every position of a layer that is not over, South to move."""
    for rank in range(index.layer_size(seeds)):
        position = Position.from_mover_board(index.unrank(seeds, rank))
        if not position.is_over():
            yield rank, position


def random_position(seeds, rng, side=None):
    cuts = sorted(rng.randint(0, seeds) for _ in range(11))
    houses = [b - a for a, b in zip([0] + cuts, cuts + [seeds])]
    return Position(houses, side or rng.choice("SN"), (0, 0))


@pytest.fixture(scope="module")
def searchers(table_dir):
    """Searchers by the largest table they hold, made once (tables are read once each)."""
    made = {}

    def get(max_table_seeds):
        if max_table_seeds not in made:
            made[max_table_seeds] = Searcher(table_dir, max_table_seeds=max_table_seeds, hash_mb=8)
        return made[max_table_seeds]

    return get


@pytest.mark.parametrize("seeds", EVERY_POSITION_LAYERS)
def test_split_search_without_its_table_gives_the_table_value_everywhere(table_dir, tablebase, seeds):
    """Every position of the layer, with only the smaller tables in memory."""
    tablebase.load(seeds)
    truth = tablebase._store.layer(seeds)
    searcher = Searcher(table_dir, max_table_seeds=seeds - 1)
    assert seeds not in searcher.table_layers
    wrong = []
    for rank, position in layer_positions(seeds):
        result = searcher.search(position, cycles="split")
        assert result.exact
        if result.value != truth[rank]:
            wrong.append((str(position), result.value, int(truth[rank])))
        assert result.move in tablebase.best_moves(position)
    assert wrong == []


@pytest.mark.parametrize("seeds", [4, 5, 6, 8])
def test_alpha_beta_alone_is_exact_whenever_it_proves_a_value(table_dir, tablebase, seeds):
    """Without component solving, a proven alpha-beta value is the table's."""
    rng = random.Random(seeds)
    searcher = Searcher(table_dir, max_table_seeds=seeds - 1, component_limit=0)
    proven = 0
    for _ in range(200):
        position = random_position(seeds, rng)
        if position.is_over():
            continue
        result = searcher.search(position, cycles="split", depth=24, nodes=200_000)
        assert result.source == "search"
        if result.exact:
            proven += 1
            assert result.value == tablebase.value(position), str(position)
            assert result.move in tablebase.best_moves(position)
    assert proven > 10


@pytest.mark.parametrize("cycles", ["split", "own"])
def test_exact_values_match_the_naive_first_repetition_game(table_dir, cycles):
    rng = random.Random(7)
    # Captures land in tables, as in the reference: every smaller layer is loaded.
    searchers = {seeds: Searcher(table_dir, max_table_seeds=seeds - 1, component_limit=0) for seeds in (3, 4, 5)}
    compared = 0
    for _ in range(400):
        seeds = rng.choice([3, 4, 5])
        position = random_position(seeds, rng)
        if position.is_over():
            continue
        try:
            expected = naive_search_value(position.mover_board().tolist(), naive_value, cycles, budget=5_000)
        except TooLarge:
            continue
        result = searchers[seeds].search(position, cycles=cycles, nodes=5_000_000)
        assert result.exact, str(position)
        assert result.value == expected, (str(position), cycles)
        compared += 1
    assert compared > 25


def test_the_history_of_a_game_counts_for_the_true_rule(table_dir):
    """Positions played before the root repeat in "own" mode and not in "split"."""
    rng = random.Random(3)
    searchers = {seeds: Searcher(table_dir, max_table_seeds=seeds - 1, component_limit=0) for seeds in (3, 4)}
    differing = compared = 0
    for _ in range(300):
        game = Game(random_position(rng.choice([3, 4]), rng, side="S"))
        searcher = searchers[game.position.seeds]
        while len(game.moves) < 30 and not game.is_over():
            quiet = [m for m in game.legal_moves() if game.position.play_capture(m)[1] == 0]
            if not quiet:
                break
            game.play(rng.choice(quiet))
        if game.is_over() or len(game.moves) < 12:
            continue
        history = [p.mover_board().tolist() for p in game.positions[:-1] if p.seeds == game.position.seeds]
        board = game.position.mover_board().tolist()
        try:
            with_history = naive_search_value(board, naive_value, "own", history=history, budget=20_000)
            fresh = naive_search_value(board, naive_value, "own", budget=20_000)
        except TooLarge:
            continue
        result = searcher.search(game, cycles="own", nodes=2_000_000)
        assert result.exact and result.value == with_history, str(game.position)
        assert searcher.search(game.position, cycles="own", nodes=2_000_000).value == fresh
        differing += with_history != fresh
        compared += 1
    assert compared > 10


@pytest.mark.parametrize(
    "start, moves",
    [
        ("0-0-0-1-0-0/0-0-0-1-0-0 S", "D d E e F"),
        ("0-0-1-0-0-0/0-0-1-0-0-0 S", "C c D d E e F"),
        ("0-0-0-0-1-0/0-0-0-0-0-1 S", "E f"),
    ],
)
def test_a_repetition_of_the_game_before_the_root_changes_the_value(table_dir, start, moves):
    """Games (found by the reference) whose history changes the true-rule value."""
    game = Game.from_record(moves, Position.from_string(start))
    board = game.position.mover_board().tolist()
    history = [p.mover_board().tolist() for p in game.positions[:-1]]
    with_history = naive_search_value(board, naive_value, "own", history=history)
    fresh = naive_search_value(board, naive_value, "own")
    assert with_history != fresh
    searcher = Searcher(table_dir, max_table_seeds=game.position.seeds - 1, component_limit=0)
    assert searcher.search(game, cycles="own").value == with_history
    assert searcher.search(game.position, cycles="own").value == fresh
    split = searcher.search(game, cycles="split")  # the tables' convention ignores history
    assert split.exact and split.value == naive_search_value(board, naive_value, "split")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(2, 12), data=st.data())
def test_positions_with_a_table_are_answered_from_it(tablebase, searchers, seeds, data):
    rng = random.Random(data.draw(st.integers(0, 10**6)))
    position = random_position(seeds, rng)
    if position.is_over():
        return
    result = Engine.over(searchers(12)).search(position, cycles=data.draw(st.sampled_from(["own", "split"])))
    assert result.source == "table" and result.exact and result.depth == 0
    assert result.value == tablebase.value(position)
    assert result.move in tablebase.best_moves(position)
    assert result.line[0] == result.move


def test_the_searcher_searches_a_root_its_tables_hold(tablebase, searchers):
    """Whether a root is answered from its table is the engine's decision
    (Engine.search): the Searcher searches it, and proves its table value."""
    position = Position.from_string("2-0-1-2-0-1/1-1-0-2-1-1 S")  # 12 seeds, in memory
    result = searchers(12).search(position, cycles="split")
    assert result.source != "table" and result.depth >= 1
    assert result.exact and result.value == tablebase.value(position)
    assert result.move in tablebase.best_moves(position)


def _one_layer_above(tablebase, searchers, seeds, rng_seed):
    position = random_position(seeds, random.Random(rng_seed))
    if position.is_over():
        return
    result = searchers(seeds - 1).search(position, cycles="split")
    assert result.exact and result.value == tablebase.value(position)
    assert result.move in tablebase.best_moves(position)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(7, 12), rng_seed=st.integers(0, 10**6))
def test_split_search_one_layer_above_the_tables_is_exact(tablebase, searchers, seeds, rng_seed):
    _one_layer_above(tablebase, searchers, seeds, rng_seed)


@pytest.mark.slow  # the same on 40 positions: CI's slow line (.ci/run)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(7, 12), rng_seed=st.integers(0, 10**6))
def test_split_search_one_layer_above_the_tables_is_exact_on_more_positions(tablebase, searchers, seeds, rng_seed):
    _one_layer_above(tablebase, searchers, seeds, rng_seed)


def test_deep_positions_give_estimates_within_the_limits(table_dir):
    searcher = Searcher(table_dir, max_table_seeds=12)
    start = Position.initial()
    result = searcher.search(start, depth=7, threads=1)
    assert result.depth == 7 and not result.exact and result.move in start.legal_moves()
    assert [it[0] for it in result.iterations] == list(range(1, 8))
    # Split over two threads: every depth in turn, to 7.
    split = searcher.search(start, depth=7, threads=2)
    assert [it[0] for it in split.iterations] == list(range(1, 8)) and split.depth == 7 and not split.exact
    assert len(result.line) == 7 and result.line[0] == result.move
    game = Game(start)
    for move in result.line:  # the principal line is legal
        game.play(move)
    limited = searcher.search(start, nodes=5_000)
    assert limited.nodes <= 5_000 and limited.move in start.legal_moves()
    timed = searcher.search(start, time=0.2)
    assert timed.depth >= 1 and timed.nps > 0


@pytest.mark.parametrize("quiescence", [0, 1, 3, 8])
@pytest.mark.parametrize("depth", [1, 2])
def test_estimates_are_those_of_a_plain_negamax_with_captures_beyond_the_horizon(table_dir, tablebase, depth,
                                                                              quiescence):
    """A shallow search's estimate against the reference: horizon leaves
    scored by the learned evaluation, captures tried `quiescence` plies
    beyond them, positions of 12 seeds or fewer valued from the tables."""
    searcher = Searcher(table_dir, max_table_seeds=12, quiescence=quiescence, threads=1)
    weights = searcher.weights

    def leaf(board):
        return int(evaluation.board_estimates(np.array([board], dtype=np.uint8), weights)[0])

    def table_value(board):
        return tablebase.value(Position.from_mover_board(list(board)))

    rng = random.Random(depth * 100 + quiescence)
    checked = 0
    while checked < 40:
        position = random_position(rng.randint(13, 24), rng, side="S")
        if position.is_over():
            continue
        searcher.tt[:] = 0
        result = searcher.search(position, depth=depth, threads=1)
        expected = naive_estimate(position.mover_board().tolist(), depth, leaf, table_value, 12, quiescence)
        assert result.value == expected, position
        checked += 1


def test_a_capture_into_the_tables_makes_a_midgame_value_exact(table_dir):
    """14 seeds: every capture lands in a layer of 12 or fewer seeds."""
    position = Position.from_string("0-0-3-0-0-1/2-2-0-2-2-2 S")
    result = search(position, cycles="split", tablebase=table_dir, max_table_seeds=12, hash_mb=8)
    assert result.exact and result.source == "search"
    assert result.move in position.legal_moves()


def test_bad_requests_raise_named_errors(table_dir):
    searcher = Searcher(table_dir, max_table_seeds=4)
    with pytest.raises(SearchError):
        searcher.search(Position.initial(), cycles="forever")
    with pytest.raises(SearchError):
        searcher.search(Position.initial(), depth=0)
    with pytest.raises(SearchError):
        searcher.search(Position.initial(), depth=MAX_PLY + 1)
    with pytest.raises(SearchError):
        searcher.search(Position.initial(), time=-1)
    with pytest.raises(GameOverError):
        searcher.search(Position.from_string("0-0-0-0-0-0/1-2-0-0-0-0 S"))


def test_transposition_entries_keep_the_whole_key():
    tt = np.zeros((8, 3), dtype=np.uint64)
    mask = np.uint64(7)
    a = (np.uint64(0x0102030405), np.uint64(0x0600000001))
    tt_store(tt, mask, a[0], a[1], -17, 1, 9, 4, False)
    assert tt_unpack(tt_probe(tt, mask, a[0], a[1])) == (-17, 1, 9, 4)
    assert tt_probe(tt, mask, a[1], a[0]) == 0
    tt_store(tt, mask, a[0], a[1], 30, 3, 255, 2, False)
    assert tt_unpack(tt_probe(tt, mask, a[0], a[1])) == (30, 3, 255, 2)


def test_cli_search_json(table_dir):
    runner = CliRunner()
    result = runner.invoke(
        # --time 0: until exact. The tables are read in the background, and on a
        # loaded machine they can arrive late enough that the default 10 s ends
        # the search first (seen with 0.3 s a layer).
        cli, ["search", "0-0-3-0-0-1/2-2-0-2-2-2 S", "--cycles", "split", "--dir", table_dir, "--json", "--time", "0"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("move", "value", "exact", "depth", "nodes", "nps", "line"):
        assert key in data
    assert data["exact"] is True and data["cycles"] == "split"
    assert data["move"] in Position.from_string("0-0-3-0-0-1/2-2-0-2-2-2 S").legal_moves()
    assert data["line"][0] == data["move"] and data["nodes"] > 0


def test_cli_search_limits_and_errors(table_dir):
    runner = CliRunner()
    result = runner.invoke(cli, ["search", "--depth", "5", "--dir", table_dir, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["depth"] == 5 and data["exact"] is False and data["move"] in "ABCDEF"
    result = runner.invoke(cli, ["search", "--depth", "3", "--time", "1", "--dir", table_dir])
    assert result.exit_code == 2
    result = runner.invoke(cli, ["search", "1-2-3", "--dir", table_dir])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_best_falls_back_to_search_above_the_tables(table_dir):
    """20 seeds: more than `best` builds by itself, so it searches."""
    runner = CliRunner()
    position = "2-2-2-2-2-0/2-2-2-2-1-1 S"
    result = runner.invoke(cli, ["best", position, "--dir", table_dir, "--depth", "6", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["source"] == "search" and data["depth"] == 6 and data["exact"] is False
    assert data["move"] in Position.from_string(position).legal_moves()
    # Every legal move gets a value, with the same repetition rule as `awele search`.
    assert [m["move"] for m in data["moves"]] == Position.from_string(position).legal_moves()
    assert data["cycles"] == "own" and any(m["best"] for m in data["moves"])
    text = runner.invoke(cli, ["best", position, "--dir", table_dir, "--nodes", "20000"])
    assert text.exit_code == 0, text.output
    assert "best move:" in text.output and "estimate" in text.output and "repetition: own" in text.output
    assert "every move" in text.output and "depth   1" in text.output  # the per-depth progress of search


def test_play_searches_above_the_tables(table_dir):
    runner = CliRunner()
    session = runner.invoke(
        cli, ["play", "--side", "N", "--position", "2-2-2-2-2-0/2-2-2-2-1-1 S", "--dir", table_dir, "--time", "0.2"],
        input="quit\n",
    )
    assert session.exit_code == 0, session.output
    assert "awele plays" in session.output and "searched" in session.output


def test_bench_quick_json():
    result = CliRunner().invoke(cli, ["bench", "--quick", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["movegen"]["leaves"] == 3592872  # perft(9) from the opening
    assert data["build"]["positions"] == sum(index.layer_size(n) for n in range(13))
    names = [row["name"] for row in data["search"]["positions"]]
    assert names[0] == "opening" and len(names) == 7
    assert all(row["nodes"] > 0 and row["move"] for row in data["search"]["positions"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(8, 12), depth=st.integers(1, 5), rng_seed=st.integers(0, 10**6))
def test_bounds_are_proven_bounds_on_the_table_value(tablebase, searchers, seeds, depth, rng_seed):
    """Tables to 5 seeds only, a shallow search: the bounds hold the true value."""
    position = random_position(seeds, random.Random(rng_seed))
    if position.is_over():
        return
    result = searchers(5).search(position, depth=depth, cycles="split", bounds=True)
    truth = tablebase.value(position)
    assert result.lower <= truth <= result.upper, (str(position), result.lower, truth, result.upper)
    if result.exact:
        assert result.lower == result.value == result.upper == truth
    else:
        assert result.lower <= result.upper


def test_bounds_hold_the_true_rule_value(table_dir):
    rng = random.Random(5)
    searchers_by_seeds = {seeds: Searcher(table_dir, max_table_seeds=seeds - 1, hash_mb=8) for seeds in (3, 4, 5)}
    checked = 0
    for _ in range(300):
        position = random_position(rng.choice([3, 4, 5]), rng)
        if position.is_over():
            continue
        try:
            truth = naive_search_value(position.mover_board().tolist(), naive_value, "own", budget=5_000)
        except TooLarge:
            continue
        result = searchers_by_seeds[position.seeds].search(position, depth=3, cycles="own", bounds=True)
        assert result.lower <= truth <= result.upper, str(position)
        checked += 1
    assert checked > 20


def test_cli_search_bounds(table_dir):
    result = CliRunner().invoke(cli, ["search", "2-2-2-2-2-0/2-2-2-2-1-1 S", "--depth", "4", "--bounds",
                                      "--dir", table_dir, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["exact"] is False and -20 <= data["lower"] <= data["upper"] <= 20


def test_a_root_with_a_table_on_disk_is_answered_from_it(table_dir, tablebase):
    """Nothing read into memory (table_bytes=0): the root's own file still answers."""
    searcher = Searcher(table_dir, table_bytes=0, hash_mb=8)
    assert searcher.table_layers == []
    position = Position.from_string("2-0-1-2-0-1/1-1-0-2-1-1 S")  # 12 seeds
    result = Engine.over(searcher).search(position)
    assert result.source == "table" and result.exact and result.depth == 0
    assert result.lower == result.value == result.upper == tablebase.value(position)


# Threads, the stop flag, the rule a value holds under, tables in the background


def test_a_torn_transposition_entry_reads_as_empty():
    """Entries are written without locks; one whose words come from two writes is refused."""
    tt = np.zeros((8, 3), dtype=np.uint64)
    mask = np.uint64(7)
    a = (np.uint64(0x0102030405), np.uint64(0x0600000001))
    b = (np.uint64(0x0102030406), np.uint64(0x0600000001))
    tt_store(tt, mask, a[0], a[1], -17, 1, 9, 4, False)
    slot_a = int(np.flatnonzero(tt[:, 0] == a[0])[0])
    scratch = np.zeros_like(tt)
    tt_store(scratch, mask, b[0], b[1], 5, 3, 255, 2, False)
    slot_b = int(np.flatnonzero(scratch[:, 0] == b[0])[0])
    torn = tt.copy()
    torn[slot_a, 2] = scratch[slot_b, 2]  # a's key, b's data word
    assert tt_probe(torn, mask, a[0], a[1]) == 0
    torn = tt.copy()
    torn[slot_a, 0] = b[0]  # b's key words, a's data word
    assert tt_probe(torn, mask, b[0], b[1]) == 0
    assert tt_unpack(tt_probe(tt, mask, a[0], a[1])) == (-17, 1, 9, 4)


_THREADED = {}


def _two_threads(table_dir, tablebase, seeds, rng_seed):
    position = random_position(seeds, random.Random(rng_seed))
    if position.is_over():
        return
    split, own = {}, {}
    for threads in (1, 2):
        key = (table_dir, seeds, threads)
        if key not in _THREADED:
            _THREADED[key] = Searcher(table_dir, max_table_seeds=seeds - 1, hash_mb=8, threads=threads)
        searcher = _THREADED[key]
        result = searcher.search(position, cycles="split")
        assert result.exact and result.threads == threads
        assert result.move in tablebase.best_moves(position)
        split[threads] = result.value
        result = searcher.search(position, cycles="own", depth=8)
        if result.exact:
            own[threads] = (result.value, result.rule)
    assert split[1] == split[2] == tablebase.value(position)
    if len(own) == 2:
        assert own[1] == own[2]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(7, 12), rng_seed=st.integers(0, 10**6))
def test_two_threads_give_the_exact_values_of_one_and_of_the_tables(table_dir, tablebase, seeds, rng_seed):
    _two_threads(table_dir, tablebase, seeds, rng_seed)


@pytest.mark.slow  # the same on 20 positions: CI's slow line (.ci/run)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(7, 12), rng_seed=st.integers(0, 10**6))
def test_two_threads_give_the_exact_values_on_more_positions(table_dir, tablebase, seeds, rng_seed):
    _two_threads(table_dir, tablebase, seeds, rng_seed)


def test_stop_ends_a_search_without_limits_from_another_thread(table_dir):
    import threading

    searcher = Searcher(table_dir, max_table_seeds=12, hash_mb=8, threads=2)
    found = []
    worker = threading.Thread(target=lambda: found.append(searcher.search(Position.initial())))
    worker.start()
    while not found and searcher._run is None:
        worker.join(0.01)
    worker.join(0.2)
    searcher.stop()
    worker.join(120)  # a liveness bound, not a timing: a missed stop would run for hours
    assert not worker.is_alive()
    assert found[0].move in Position.initial().legal_moves() and not found[0].exact


_TRUE_RULE_VALUES = {}


def _true_rule_value(board):
    """d under the true rule all the way down: every capture's child is searched
    by the reference again, never read from a table."""
    key = tuple(board)
    if key not in _TRUE_RULE_VALUES:
        _TRUE_RULE_VALUES[key] = naive_search_value(list(board), _true_rule_value, "own", budget=20_000)
    return _TRUE_RULE_VALUES[key]


# Slow (about 25-75 s each on 2 cores): left out of the default run; .ci/run runs them by name.
@pytest.mark.slow
def test_values_said_to_hold_under_the_true_rule_do(table_dir, tablebase):
    """Under cycles="own", a value marked rule="true" equals the true rule's value
    even below the captures; one resting on the tables is marked "split"."""
    rng = random.Random(11)
    searchers_by_seeds = {seeds: Searcher(table_dir, max_table_seeds=seeds - 1, component_limit=0, hash_mb=8)
                          for seeds in (3, 4, 5)}
    rules = []
    for _ in range(300):
        position = random_position(rng.choice([3, 4, 5]), rng)
        if position.is_over():
            continue
        try:
            truth = _true_rule_value(position.mover_board().tolist())
        except TooLarge:
            continue
        result = searchers_by_seeds[position.seeds].search(position, cycles="own", nodes=5_000_000)
        assert result.exact and result.rule in ("true", "split")
        if result.rule == "true":
            assert result.value == truth, str(position)
        rules.append(result.rule)
    assert rules.count("true") > 10 and rules.count("split") > 0


# Slow (about 25-75 s each on 2 cores): left out of the default run; .ci/run runs them by name.
@pytest.mark.slow
def test_a_root_answered_from_its_table_says_which_rule(table_dir, tablebase, searchers):
    searcher = Engine.over(searchers(12))
    rng = random.Random(2)
    seen = set()
    for _ in range(200):
        position = random_position(rng.randint(2, 12), rng)
        if position.is_over():
            continue
        result = searcher.search(position, cycles="own")
        assert result.source == "table"
        taking_all = abs(result.value) == position.seeds
        assert result.rule == ("true" if taking_all else "split")
        assert result.as_dict()["rule"] == result.rule
        assert searcher.search(position, cycles="split").rule == "split"
        seen.add(result.rule)
    assert seen == {"true", "split"}


def test_tables_are_read_in_the_background_by_default(table_dir):
    searcher = Searcher(table_dir, hash_mb=8)
    first = searcher.search("2-2-2-2-2-0/2-2-2-2-1-1 S", depth=4)  # does not wait for the tables
    assert first.depth == 4
    assert searcher.wait_for_tables(timeout=300)
    assert searcher.table_layers == list(range(13)) and searcher.left_out == {}
    assert searcher.table_budget > 0


@pytest.mark.parametrize("reach, depths", [(12, [1, 1]), (1, [1, 2])])
def test_tables_that_arrive_during_a_search_are_used_by_its_next_iterations(table_dir, tablebase, monkeypatch, reach,
                                                                            depths):
    """The background reader brings layers 1..12 in after the first iteration
    of a 14-seed root. Within ARRIVAL_REACH seeds of the root the deepening
    starts over; below it, it goes on. Either way the next iteration probes
    them: every move of these roots captures into the tables, so its value
    is exact."""
    rng = random.Random(8)
    cases = []
    while len(cases) < 3:
        position = random_position(14, rng)
        children = [position.play_capture(move) for move in position.legal_moves()]
        if children and all(captured and not child.is_over() for child, captured in children):
            cases.append((position, max(captured - tablebase.value(child) for child, captured in children)))
    gate = threading.Event()
    reader = TableReader._read_in_background

    def held_back(self, layers):
        gate.wait()
        reader(self, layers)

    monkeypatch.setattr(TableReader, "_read_in_background", held_back)
    monkeypatch.setattr(search_run, "ARRIVAL_REACH", reach)
    for position, value in cases:
        gate.clear()
        searcher = Searcher(table_dir, hash_mb=8, threads=1)
        seen = []

        def after(depth, *_, searcher=searcher, seen=seen):
            seen.append(depth)
            if not gate.is_set():
                assert searcher.table_layers == [0]
                gate.set()
                assert searcher.wait_for_tables(timeout=300)

        result = searcher.search(position, depth=12, progress=after)
        assert seen == depths
        assert result.exact and result.value == value


# A 14-seed root the split search proves in 22 plies with layers 0..12 in
# memory, and not in 30 without them (the position of test_cli_search_json).
ARRIVAL_ROOT = "0-0-3-0-0-1/2-2-0-2-2-2 S"


def test_a_search_started_afresh_by_arriving_tables_searches_as_a_new_one(table_dir, held_reader):
    """Layers that arrive near the root start the deepening over with an empty
    transposition table and an empty move-ordering history: the iterations
    after the start are a new Searcher's, node for node. (A history learned
    without the tables once left the proof at depth 91 instead of 22, and a
    search until exact could then end unproven at the deepest depth: CI
    saw `search --time 0` return an estimate.)"""
    fresh = Searcher(table_dir, max_table_seeds=12, hash_mb=8, threads=1, component_limit=0)  # read now
    expected = fresh.search(ARRIVAL_ROOT, cycles="split")
    assert expected.exact

    searcher = Searcher(table_dir, hash_mb=8, threads=1, component_limit=0)

    def after(depth, *_):
        if depth == 10 and not held_reader.is_set():
            assert searcher.table_layers == [0]
            held_reader.set()
            assert searcher.wait_for_tables(timeout=300)

    result = searcher.search(ARRIVAL_ROOT, cycles="split", progress=after)
    assert [depth for depth, *_ in result.iterations[:10]] == list(range(1, 11))
    assert not any(exact for _, _, exact, _, _ in result.iterations[:10])
    again = result.iterations[10:]
    assert [(depth, value, exact, nodes) for depth, value, exact, nodes, _ in again] == [
        (depth, value, exact, nodes) for depth, value, exact, nodes, _ in expected.iterations]
    assert (result.exact, result.value, result.move) == (True, expected.value, expected.move)


def test_a_search_until_exact_waits_at_its_deepest_depth_for_tables_still_coming(table_dir, held_reader,
                                                                                monkeypatch):
    """With no limit, a search that has searched every depth unproven while
    the background reader still reads waits for the layers, starts afresh
    with them, and ends exact. With a limit it does not wait."""
    monkeypatch.setattr(search_module, "UNLIMITED_DEPTH", 25)
    searcher = Searcher(table_dir, hash_mb=8, threads=1, component_limit=0)
    limited = searcher.search(ARRIVAL_ROOT, cycles="split", depth=25)
    assert not limited.exact and limited.depth == 25 and searcher.table_layers == [0]
    seen = []

    def after(depth, *_):
        seen.append(depth)
        if depth == 25:
            held_reader.set()  # read in the background: not waited for here

    result = searcher.search(ARRIVAL_ROOT, cycles="split", progress=after)
    assert seen[:26] == [*range(1, 26), 1]
    assert searcher.table_layers == list(range(13))
    assert result.exact and result.value == 1 and result.depth < 25


def _capture_into_a_searched_layer(tablebase, rng, seeds, table_seeds):
    """A position of `seeds` seeds, not won by every seed, with a capture whose
    child is above the tables (so searched, right after a capture):
    (position, house, captured, child)."""
    while True:
        position = random_position(seeds, rng)
        if position.is_over() or tablebase.value(position) == seeds:
            continue
        for move in position.legal_moves():
            child, captured = position.play_capture(move)
            if captured and child.seeds > table_seeds and not child.is_over():
                return position, move, captured, child


def test_a_depth_limited_entry_cuts_as_an_estimate_and_never_in_bounds(table_dir, tablebase):
    """A depth-limited entry right after a capture cuts the search, but its
    score is an estimate: the value is not exact, and bounds ignore it."""
    rng = random.Random(3)
    position, _, captured, child = _capture_into_a_searched_layer(tablebase, rng, 10, 6)
    searcher = Searcher(table_dir, max_table_seeds=6, threads=1)
    searcher.search(position, depth=1, cycles="split")  # the table is cleared for this convention
    mask = np.uint64(searcher.tt.shape[0] - 1)
    mover, opponent = child.packed()
    planted = -child.seeds  # the child's mover loses every seed: the capture looks winning
    tt_store(searcher.tt, mask, mover, opponent, planted, 3, 60, 7, False)  # EXACT, depth 60, no move
    result = searcher.search(position, depth=3, cycles="split", bounds=True)
    assert result.value == captured - planted == position.seeds  # the entry cut: every seed, which is wrong
    assert not result.exact
    truth = tablebase.value(position)
    assert result.lower is not None and result.upper is not None
    assert result.lower <= truth <= result.upper  # the bounds searched the child


@pytest.mark.parametrize("split_depth", [1, 3])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(24, 40), depth=st.integers(3, 7), rng_seed=st.integers(0, 10**6))
def test_a_split_search_gives_the_bounds_of_one_kernel(table_dir, monkeypatch, split_depth, seeds, depth, rng_seed):
    """Far above the tables a bounds search (horizon leaves -n or +n) cuts
    with proven entries only, so its value does not depend on the order its
    moves are searched in: split over threads down to `split_depth` plies
    from the horizon it must equal the kernel's, and its line must be legal."""
    monkeypatch.setattr(search_run, "SPLIT_DEPTH", split_depth)
    position = random_position(seeds, random.Random(rng_seed))
    if position.is_over():
        return
    searcher = Searcher(table_dir, max_table_seeds=6, hash_mb=1, threads=1)
    values = {}
    for threads in (1, 2, 3):
        for horizon in (1, -1):
            searcher.tt[:] = 0
            run = SearchRun(searcher, position, None, "own", SearchResult(position, "own"), None, 0.0, threads, None)
            with run.split_threads():  # the other threads of the split search, when more than one
                score, _, nodes, aborted, _ = run.iterate(depth, horizon=horizon)
            assert not aborted and nodes > 0
            values[threads, horizon] = score
            line = Game(position)
            for house in run.pv[0, : run.pv_length[0]]:
                assert not line.position.is_over()
                line.play(HOUSE_LETTERS[line.position.to_move][house])
    for threads in (2, 3):
        assert values[threads, 1] == values[1, 1] and values[threads, -1] == values[1, -1]
    assert values[1, 1] <= values[1, -1]


# Slow (about 25-75 s each on 2 cores): left out of the default run; .ci/run runs them by name.
@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(8, 12), rng_seed=st.integers(0, 10**6))
def test_a_search_split_at_every_node_is_exact(table_dir, tablebase, monkeypatch, seeds, rng_seed):
    """Splitting every node of the leftmost line, down to the horizon, keeps
    exact values exact: the table's value in "split" mode, and the first
    repetition game's in "own" mode (checked against the naive reference)."""
    monkeypatch.setattr(search_run, "SPLIT_DEPTH", 1)
    position = random_position(seeds, random.Random(rng_seed))
    if position.is_over():
        return
    searcher = Searcher(table_dir, max_table_seeds=seeds - 1, hash_mb=1, threads=2, component_limit=0)
    result = searcher.search(position, cycles="split", depth=30)
    if result.exact:
        assert result.value == tablebase.value(position) and result.move in tablebase.best_moves(position)
    result = searcher.search(position, cycles="own", depth=12)
    if result.exact:
        try:
            expected = naive_search_value(position.mover_board().tolist(), naive_value, "own", budget=5_000)
        except TooLarge:
            return
        assert result.value == expected


# Each numba function is loaded (or, on a fresh install, compiled) on its
# first call in a process: one first called inside a timed search spends its
# time there. Found in UCI on a cold cache: the first split node's store into
# the transposition table took 0.3 s of a 0.3 s move.
_FIRST_CALLS = """
import importlib, pkgutil, sys
from numba.core.registry import CPUDispatcher
import solver
from solver.engine import Engine
from solver.position import Game, Position
from solver.search import Searcher

modules = [importlib.import_module("solver." + m.name) for m in pkgutil.iter_modules(solver.__path__)
           if m.name != "__main__"]

def compiled():
    return {module.__name__ + "." + name: len(f.signatures) for module in modules
            for name, f in vars(module).items() if isinstance(f, CPUDispatcher)}

searcher = Searcher(sys.argv[1], threads=2)
before = compiled()
game = Game(Position.initial())
searcher.search(game, time=0.2)
for move in "FbDaBf":
    game.play(move)
searcher.search(game, time=0.2)
searcher.search(game, time=0.2, bounds=True)
searcher.move_values(game, time=0.2)
searcher.search("0-0-3-0-0-1/2-2-0-2-2-2 S", time=0.2, cycles="split")
Engine.over(searcher).search("0-0-0-1-0-0/0-0-1-1-0-1 S", time=0.2)  # answered from the tables
after = compiled()
print({name: (before.get(name, 0), count) for name, count in after.items() if count != before.get(name, 0)})
"""


def test_a_searcher_loads_every_kernel_its_searches_call_before_the_first(table_dir):
    done = subprocess.run([sys.executable, "-c", _FIRST_CALLS, table_dir], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{}", f"first called during a search (before, after): {done.stdout}"


# Layers the search does without


def _copy_tables(table_dir, tmp_path):
    import shutil

    directory = tmp_path / "tables"
    shutil.copytree(table_dir, directory)
    return str(directory)


def _damage_layer(directory, seeds):
    import h5py

    from solver import tables

    with h5py.File(tables.table_path(directory, seeds), "r+") as handle:
        values = handle[tables.DATASET]
        for rank in range(3, values.shape[0], 10_007):
            values[rank] = -int(values[rank]) - 1


@pytest.fixture
def held_reader(monkeypatch):
    """The background reader held back until the returned event is set."""
    gate = threading.Event()
    reader = TableReader._read_in_background

    def held_back(self, layers):
        gate.wait(300)
        reader(self, layers)

    monkeypatch.setattr(TableReader, "_read_in_background", held_back)
    return gate


@pytest.fixture
def thread_failures(monkeypatch):
    """Exceptions that end a thread (each would print a traceback)."""
    failures = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    return failures


def test_a_layer_removed_or_made_a_pipe_while_read_is_left_out_and_the_rest_is_read(
        table_dir, tmp_path, held_reader, thread_failures):
    import os

    from solver import tables

    directory = _copy_tables(table_dir, tmp_path)
    said = []
    searcher = Searcher(directory, hash_mb=8, log=said.append)
    assert searcher.reading_tables() and searcher.table_layers == [0]
    os.remove(tables.table_path(directory, 5))
    os.remove(tables.table_path(directory, 8))
    os.mkfifo(tables.table_path(directory, 8))
    held_reader.set()
    assert searcher.wait_for_tables(timeout=300)
    assert thread_failures == []
    assert sorted(searcher.left_out) == [5, 8]
    assert isinstance(searcher.left_out[5], MissingTableError)
    assert searcher.table_layers == [n for n in range(13) if n not in (5, 8)]
    assert len(said) == 2 and "layer 5 " in said[0] and "layer 8 " in said[1]


def test_a_tablebase_closed_while_read_leaves_the_layers_above_out_in_one_line(
        table_dir, held_reader, thread_failures):
    tablebase = Tablebase(table_dir)
    said = []
    searcher = Searcher(tablebase, hash_mb=8, log=said.append)
    tablebase.close()
    held_reader.set()
    assert searcher.wait_for_tables(timeout=300)
    assert thread_failures == []
    assert sorted(searcher.left_out) == list(range(1, 13))
    assert all(isinstance(error, TablebaseClosedError) for error in searcher.left_out.values())
    assert said == ["the tables were closed: layers 1..12 are left out of the search"]


def test_a_damaged_layer_is_searched_without_and_named_once(table_dir, tmp_path):
    """A root in a damaged layer, or one whose captures lead into it, is
    searched (not answered with the first move and an error); every move of
    it gets a value; the layer is named once however often it is met."""
    directory = _copy_tables(table_dir, tmp_path)
    _damage_layer(directory, 9)
    said = []
    searcher = Searcher(directory, max_table_seeds=12, hash_mb=8, threads=1, log=said.append)
    assert list(searcher.left_out) == [9] and searcher.table_layers == [n for n in range(13) if n != 9]
    with Tablebase(table_dir) as good:
        rng = random.Random(4)
        for seeds in (9, 9, 11, 12):
            position = random_position(seeds, rng)
            while position.is_over() or (seeds > 9 and not any(
                    captured and child.seeds == 9 for child, captured in map(position.play_capture,
                                                                            position.legal_moves()))):
                position = random_position(seeds, rng)
            result = searcher.search(position, depth=4)
            assert result.source == "search" and result.depth >= 1 and result.move in position.legal_moves()
            values = searcher.move_values(position, depth=3)
            assert all(value.value is not None for value in values)
            if seeds == 9:  # its captures land in the tables: its component is solved
                exact = searcher.search(position, cycles="split", time=60)
                assert exact.exact and exact.value == good.value(position)
    assert len(said) == 1 and "layer 9 " in said[0]


def test_a_damaged_layer_read_a_chunk_at_a_time_is_left_out_when_met(table_dir, tmp_path, monkeypatch):
    """A layer too large to be read for the search is probed from its file:
    damage found there leaves it out, named once, and the root is searched."""
    import solver.probe as probe_module

    directory = _copy_tables(table_dir, tmp_path)
    _damage_layer(directory, 12)
    monkeypatch.setattr(probe_module, "WHOLE_LAYER_LIMIT", 1000)
    said = []
    below = sum(index.layer_size(n) for n in range(12))
    searcher = Searcher(directory, table_bytes=below, hash_mb=8, threads=1, log=said.append)
    assert searcher.left_out == {} and searcher.table_layers == list(range(12))
    position = random_position(12, random.Random(5))
    engine = Engine.over(searcher)  # tries the root's table, as `awele search`
    for _ in range(3):
        result = engine.search(position, time=0.2)
        assert result.source == "search" and result.move in position.legal_moves()
    assert list(searcher.left_out) == [12] and len(said) == 1


# Time: the unfinished depth


def test_a_timed_search_starts_the_depth_it_predicts_not_to_finish(table_dir, monkeypatch):
    """At a fixed move time the deepening goes on until the end stops it,
    even when the last two iterations predict the next one cannot finish."""
    import solver.clock

    monkeypatch.setattr(solver.clock, "predicted", lambda spent: 1e9)
    searcher = Searcher(table_dir, max_table_seeds=6, hash_mb=8, threads=1)
    result = searcher.search(Position.initial(), time=0.3)
    assert result.depth > 2 and not result.exact


@pytest.mark.parametrize("threads", [1, 2])
def test_an_iteration_cut_short_by_the_end_gives_its_best_move_so_far(table_dir, monkeypatch, threads):
    """The end arriving in the middle of depth 7 (simulated: a node budget,
    then the stop flag, as the timer sets it) gives the best of the root
    moves that depth searched to the end, with its line; `depth` stays 6."""
    from solver.clock import STOP, STOPPED

    position = Position.from_string("3-5-0-6-4-5/5-4-1-5-5-5 S")
    iterate = SearchRun.iterate

    def stopped_in_depth_7(self, depth, budget=search_run.UNLIMITED, horizon=0):
        if depth < 7:
            return iterate(self, depth, budget, horizon)
        # Depth 7 as the kernel alone (as under a node limit) counts its nodes
        # to the end; then, from the same transposition table and history
        # counts, it is searched again and stopped at nine tenths of them.
        searcher = self.searcher
        tt, history = searcher.tt.copy(), searcher.history.copy()
        whole = iterate(self, depth, 10**12, horizon)
        assert not whole[3]  # not aborted
        searcher.tt[:], searcher.history[:] = tt, history
        answer = iterate(self, depth, int(whole[2] * 0.9), horizon)
        self.control[STOP] = STOPPED
        return answer

    monkeypatch.setattr(SearchRun, "iterate", stopped_in_depth_7)
    searcher = Searcher(table_dir, max_table_seeds=6, hash_mb=8, threads=1)
    result = searcher.search(position, time=600.0, threads=threads)
    assert result.cut_short and result.depth == 6 and not result.exact
    assert result.move in position.legal_moves() and result.line[0] == result.move
    assert -position.seeds <= result.value <= position.seeds
    assert result.as_dict()["cut_short"] is True


# One answer above the tables: every move from one root search


def _agrees(value, move, moves):
    """The position's value is its best move's, and its move is marked best."""
    known = [m for m in moves if m["value"] is not None]
    best = max(m["value"] for m in known)
    assert value == best
    assert [m["move"] for m in moves if m["best"]] == [m["move"] for m in known if m["value"] == best]
    assert move in [m["move"] for m in moves if m["best"]]


@pytest.mark.parametrize("limits", [["--nodes", "30000"], ["--time", "0.5"], ["--depth", "5"]])
def test_best_above_the_tables_gives_one_answer(table_dir, limits):
    """`awele best` above the tables: the position's value is its best move's
    and the move it names is starred (they came from two searches before)."""
    runner = CliRunner()
    for moves in ("1. F b 2. D a", "1. A c 2. E b", "1. C f"):
        result = runner.invoke(cli, ["best", "--moves", moves, "--dir", table_dir, "--json", *limits])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["source"] == "search"
        _agrees(data["value"], data["move"], data["moves"])
        text = runner.invoke(cli, ["best", "--moves", moves, "--dir", table_dir, *limits]).output
        named = text.split("best move: ")[1].split()[0]
        assert f"* {named} " in text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(8, 11), rng_seed=st.integers(0, 10**6))
def test_every_move_values_are_the_tables_where_exact(table_dir, tablebase, searchers, seeds, rng_seed):
    """search_every_move with cycles="split": every move's exact value is the
    tables' one, the position's value the best of them, its move one of the best."""
    position = random_position(seeds, random.Random(rng_seed))
    if position.is_over():
        return
    searcher = searchers(seeds - 3)
    result = searcher.search_every_move(position, cycles="split", nodes=200_000)
    assert [m.move for m in result.moves] == position.legal_moves()
    for move in result.moves:
        child, captured = position.play_capture(move.move)
        if move.exact and not child.is_over():
            assert move.value == captured - tablebase.value(child), (str(position), move)
    _agrees(result.value, result.move, move_rows(result.moves))
    if all(m.exact for m in result.moves):
        assert result.exact and result.value == tablebase.value(position)


def test_each_iteration_searches_the_last_best_move_first(table_dir):
    """An iteration cut short by the time limit gives the best root move it
    searched to the end, which is sound only when it began with the last
    iteration's best move. A root entry stored deeper with another move (left
    by an earlier search, where the line above differed) would put that move
    first: the run has the entry name the last best move instead, its score
    and depth kept."""
    position = next(p for p in (random_position(30, random.Random(seed)) for seed in range(100))
                    if not p.is_over() and len(p.legal_moves()) >= 2)
    searcher = Searcher(table_dir, max_table_seeds=6, threads=1)
    best = position.house_of(searcher.search(position, depth=4, cycles="own").move)
    other = next(position.house_of(m) for m in position.legal_moves() if position.house_of(m) != best)
    mask = np.uint64(searcher.tt.shape[0] - 1)
    mover, opponent = position.packed()
    tt_store(searcher.tt, mask, mover, opponent, -3, 2, 200, other, False)  # UPPER, depth 200, another move

    def first_searched(run):
        # One node: the root's moves come back in the order searched.
        run.kernel(run.main, run.root, 6, (-INFINITE, INFINITE), 0, 1, 0)
        return int(run.main.top_moves[0, 0])

    run = SearchRun(searcher, position, None, "own", SearchResult(position, "own"), None, 0.0, 1, None)
    assert first_searched(run) == other  # the hazard: the stored entry's move first
    run.houses = [best]  # as after an iteration that found `best`
    run._first_at_root()
    assert first_searched(run) == best
    assert tt_unpack(tt_probe(searcher.tt, mask, mover, opponent)) == (-3, 2, 200, best)
    fresh = Searcher(table_dir, max_table_seeds=6, threads=1, hash_mb=1)  # no entry: one of depth 0 is made
    fresh.search(position, depth=1, cycles="own")
    fresh.tt[:] = 0
    run = SearchRun(fresh, position, None, "own", SearchResult(position, "own"), None, 0.0, 1, None)
    run.houses = [other]
    run._first_at_root()
    assert first_searched(run) == other
    assert tt_unpack(tt_probe(fresh.tt, np.uint64(fresh.tt.shape[0] - 1), mover, opponent))[2:] == (0, other)


def test_a_search_stopped_before_depth_1_plays_the_move_the_tables_rank_best(table_dir, tablebase):
    """Inside the tables under the true rule a root is searched; stopped after
    one node (no iteration finished) it has no value, and its move is the one
    the tables rank best, not merely the first legal one."""
    rng = random.Random(11)
    searcher = Searcher(table_dir, max_table_seeds=8, threads=1)
    tried = 0
    while tried < 20:
        position = random_position(8, rng)
        if position.is_over() or not searcher.searches_inside_tables(position):
            continue
        children = {move: position.play_capture(move) for move in position.legal_moves()}
        if any(child.is_over() for child, _ in children.values()):
            continue
        scores = {move: captured - tablebase.value(child) for move, (child, captured) in children.items()}
        if len(set(scores.values())) < 2:
            continue
        tried += 1
        result = searcher.search(position, nodes=1)
        assert result.depth == 0 and result.value is None
        assert scores[result.move] == max(scores.values()), (position, result.move, scores)
