"""Differential tests against OpenSpiel's ``oware`` (an independent implementation).

OpenSpiel's conventions, read from open_spiel/games/oware/oware.{h,cc} and
oware_board.cc (open-spiel 2.0.2) and pinned down by
``test_openspiel_conventions`` below:

- Player 0 is South and moves first; player 1 is North.
- The board is ``seeds[0..11]``: player 0's six houses, then player 1's, each
  row in sowing (counter-clockwise) order -- exactly our absolute order A..F,
  a..f. ``str(state)`` prints player 1's row as f..a above player 0's A..F.
- An action is the house's index 0..5 inside the mover's row:
  ``action_to_string(0, k) == "ABCDEF"[k]`` and ``action_to_string(1, k) ==
  "abcdef"[k]``.
- ``observation_string(p)`` is ``"<to move> | <score 0> <score 1> | <12 seeds>"``
  in exact integers (used here); ``observation_tensor(p)`` is the same 12
  seeds and 2 scores divided by 48.
- The rules of a move agree with RULES.md: the origin house is skipped on every
  lap, the capture chain runs back through 2s and 3s in the opponent's row, a
  grand slam captures nothing, a mover whose opponent is empty must feed him.

How OpenSpiel ends a game, and how that compares with RULES.md:

- ``is_terminal()`` is true exactly when a score is above 24 or both are 24.
  After every move OpenSpiel ends the game ("CollectAndTerminate": each player
  takes the seeds in his own row) when the new position repeats one seen since
  the last capture, or when the new mover has no legal move -- which covers
  rule 5 and also a game already won, since a terminal state has no legal
  moves. So the final scores always add up to 48 and the board is emptied.
  RULES.md says the same: when the game ends each player takes the seeds on his
  own side; at rule 5 those are all on the mover's side.
- Its repetition key is the side to move, the scores and the houses, and the
  set is cleared at each capture. A capture removes seeds for good, so no
  position after it can have the houses of one before it: this is RULES.md's
  rule (twelve houses and side to move occurring a second time).
- Rule 6 (mover's side empty) never arises there: OpenSpiel always starts from
  the opening, feeding is compulsory and a grand slam captures nothing, so a
  side is never empty when it is to move. Rule 6 is tested in test_position.py.
- ``returns()`` is +1/-1/0 by comparing the final scores.
- ``max_game_length()`` is 1000: applying a move after 1000 plies fails a
  check (there is no truncation rule). The games here are asserted to stay
  below that; none comes near (random games last a few hundred plies at most).

So the two engines must agree on every move of a game from the opening. What is
compared: the legal moves, the houses and captured counts while the game goes
on, when it ends, and the final totals and winner. Once OpenSpiel has ended the
game it has emptied the houses into the scores, so there the final totals
(``Game.result()``) are compared with its scores.
"""

import random
from collections import Counter

import pytest

from solver import Game, Position, perft

pyspiel = pytest.importorskip("pyspiel", reason="OpenSpiel (open-spiel) is a test dependency")

OWARE = pyspiel.load_game("oware")
LETTERS = ("ABCDEF", "abcdef")  # OpenSpiel player 0 = South, player 1 = North
SIDES = ("S", "N")
RANDOM_GAMES = 400
MIDGAME_POSITIONS = 20


def board_of(state):
    """(player to move, (score 0, score 1), 12 seeds) read from OpenSpiel's observation string."""
    to_move, scores, seeds = state.observation_string(0).split(" | ")
    return int(to_move), tuple(int(s) for s in scores.split()), tuple(int(s) for s in seeds.split())


def action_of(move):
    """OpenSpiel's action for one of our move letters (either side)."""
    return LETTERS[0 if move.isupper() else 1].index(move)


def moves_of(state):
    """OpenSpiel's legal actions as our letters, for the player to move."""
    player = state.current_player()
    return sorted(LETTERS[player][action] for action in state.legal_actions())


def openspiel_outcome(state):
    """'S', 'N' or 'draw' from OpenSpiel's returns at the end of a game."""
    south, north = state.returns()
    return "S" if south > north else "N" if north > south else "draw"


def test_openspiel_conventions():
    """The facts about OpenSpiel that the rest of this file relies on."""
    state = OWARE.new_initial_state()
    assert OWARE.max_game_length() == 1000
    assert state.current_player() == 0
    assert board_of(state) == (0, (0, 0), (4,) * 12)
    assert [state.action_to_string(0, k) for k in range(6)] == list(LETTERS[0])
    assert [state.action_to_string(1, k) for k in range(6)] == list(LETTERS[1])
    state.apply_action(5)  # South's F: 4 seeds into a, b, c, d
    assert board_of(state) == (1, (0, 0), (4, 4, 4, 4, 4, 0, 5, 5, 5, 5, 4, 4))
    # The diagram shows North's row f..a on top: e and f still hold 4.
    rows = [line.split() for line in str(state).splitlines()]
    assert ["f", "e", "d", "c", "b", "a"] in rows
    assert rows[rows.index(["f", "e", "d", "c", "b", "a"]) + 1] == ["4", "4", "5", "5", "5", "5"]
    assert state.observation_tensor(0) == pytest.approx([s / 48 for s in board_of(state)[2]] + [0, 0])
    state.apply_action(0)  # North's a: 5 seeds into b, c, d, e, f
    assert board_of(state) == (0, (0, 0), (4, 4, 4, 4, 4, 0, 0, 6, 6, 6, 5, 5))


def play_both(seed):
    """Play one random game in both engines, comparing them after every move.

    Yields (ply, OpenSpiel state, Game) before each move and once at the end,
    so callers can take snapshots. Moves are drawn with random.Random(seed)
    among our legal moves (after checking OpenSpiel offers the same ones).
    """
    rng = random.Random(seed)
    state = OWARE.new_initial_state()
    game = Game()
    ply = 0
    earlier = []  # (houses, side to move) of the positions before this one
    while True:
        where = f"seed {seed}, after {' '.join(game.moves)!r}"
        position = game.position
        yield ply, state, game
        repeated = (position.houses, position.to_move) in earlier
        earlier.append((position.houses, position.to_move))
        if state.is_terminal():
            assert game.is_over(), f"{where}: OpenSpiel ended the game, we did not ({position})"
            assert game.result() == board_of(state)[1], f"{where}: final totals"
            assert game.outcome().winner == openspiel_outcome(state), f"{where}: winner"
            assert (game.end_reason == "repetition") == repeated, f"{where}: {game.end_reason} in {position}"
            if repeated:
                # Repetition is about history: the position alone goes on.
                assert not position.is_over() and position.legal_moves(), where
            else:
                assert position.is_over() and position.legal_moves() == [], where
                assert position.result() == game.result(), where
            assert game.legal_moves() == [], where
            return
        assert not game.is_over(), f"{where}: we ended the game ({game.end_reason}), OpenSpiel did not"
        assert not repeated, where
        assert not position.is_over() and position.result() is None and position.outcome() is None, where
        to_move, scores, houses = board_of(state)
        assert position.to_move == SIDES[to_move], where
        assert position.houses == houses, f"{where}: houses {position} vs OpenSpiel {houses}"
        assert position.captured == scores, f"{where}: captured {position} vs OpenSpiel {scores}"
        legal = sorted(game.legal_moves())
        assert legal == moves_of(state), f"{where}: legal moves in {position}"
        assert sorted(position.legal_moves()) == legal, where
        assert ply < OWARE.max_game_length(), f"{where}: OpenSpiel cannot go beyond this ply"
        move = rng.choice(legal)
        game.play(move)
        state.apply_action(action_of(move))
        ply += 1


def test_random_games_agree_with_openspiel():
    reasons = Counter()
    plies = 0
    for seed in range(RANDOM_GAMES):
        for ply, _, game in play_both(seed):  # noqa: B007 (the last ply and game are read below)
            pass
        reasons[game.end_reason] += 1
        plies += ply
    # Every way a game from the opening can end was met, so each was compared.
    assert set(reasons) == {"25 seeds", "no feeding move", "repetition"}, reasons
    assert plies > 100 * RANDOM_GAMES / 2, plies


def openspiel_perft(state, depth, seen, suspects):
    """Leaves `depth` plies below an OpenSpiel state.

    As in solver.perft, a line counts as a leaf once it is `depth` plies long
    even if its last move ended the game, and an interior node where the game
    is over (25 seeds, 24-24, rule 5) has no children.

    OpenSpiel ends a line when a position repeats; our perft looks at positions
    alone and goes on, so there the rules differ. Such a line is recognised
    without our engine: the move captured nothing (the scores before collection
    are the parent's), the repeated board B is one of `seen` (the boards of the
    game and of the line, as `repetition_key`s), and OpenSpiel's final scores are
    B's scores plus the seeds in each row. A terminal child matching some B that
    way is added to `suspects` (a rule-5 end could match too: that can only make
    the caller skip a position, never hide a difference).
    """
    if depth == 0:
        return 1
    if state.is_terminal():
        return 0
    player, scores, _ = board_of(state)
    leaves = 0
    for action in state.legal_actions():
        child = state.child(action)
        if child.is_terminal():
            final = board_of(child)[1]
            if depth > 1 and (1 - player, scores, final) in seen:
                suspects.append(child.history())
            leaves += openspiel_perft(child, depth - 1, seen, suspects)
        else:
            seen.append(repetition_key(board_of(child)))
            leaves += openspiel_perft(child, depth - 1, seen, suspects)
            seen.pop()
    return leaves


def repetition_key(board):
    """(player to move, scores, the scores OpenSpiel would give if the game ended on this board)."""
    player, (south, north), seeds = board
    return player, (south, north), (south + sum(seeds[:6]), north + sum(seeds[6:]))


@pytest.mark.parametrize("depth", range(1, 7))
def test_perft_from_the_opening_agrees_with_openspiel(depth):
    state = OWARE.new_initial_state()
    suspects = []
    expected = openspiel_perft(state, depth, [repetition_key(board_of(state))], suspects)
    assert suspects == []
    assert perft(Position.initial(), depth) == expected


def midgame_positions():
    """(seed, ply, OpenSpiel state, Position, repetition keys of the game so far) at a
    random ply of each of 60 seeded random games."""
    snapshots = []
    for seed in range(1000, 1000 + 3 * MIDGAME_POSITIONS):
        plies = [(ply, state.clone(), game.position) for ply, state, game in play_both(seed)]
        ply, state, position = random.Random(seed).choice(plies[4:-1])
        seen = [repetition_key(board_of(s)) for _, s, _ in plies[: ply + 1]]
        snapshots.append((seed, ply, state, position, seen))
    return snapshots


def test_perft_from_midgame_positions_agrees_with_openspiel():
    compared = []
    for seed, ply, state, position, seen in midgame_positions():
        counts = []
        for depth in range(1, 5):
            suspects = []
            counts.append((openspiel_perft(state, depth, list(seen), suspects), suspects))
        if any(suspects for _, suspects in counts):
            continue  # a repetition may end a line in OpenSpiel: the rules differ here
        for depth, (expected, _) in enumerate(counts, start=1):
            assert perft(position, depth) == expected, f"perft({position}, {depth}) (seed {seed}, ply {ply})"
        compared.append(position)
        if len(compared) == MIDGAME_POSITIONS:
            break
    assert len(compared) == MIDGAME_POSITIONS
    # Some of them are late in the game, where the 25-seed stop and feeding matter.
    assert any(max(p.captured) >= 15 for p in compared)
    assert any(p.seeds <= 16 for p in compared)
