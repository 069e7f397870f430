"""The web oracle's API through FastAPI's test client: values agree with the
Tablebase, every bad request is a 400 with one message, nothing outside the
package's page files is served."""

import json
import random
import re
import socket
import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from click.testing import CliRunner
from fastapi.testclient import TestClient

from solver import Game, Position, engine
from solver.analysis import analyse
from solver.cli import cli
from solver.limits import CYCLES
from solver.probe import Tablebase
from solver.report import Rule, best_of
from solver.web import create_app
from solver.web.app import MAX_BODY_BYTES, STATIC_FILES

MAX_SEARCH_TIME = 0.5


@pytest.fixture(scope="module")
def client(table_dir):
    app = create_app(table_dir, max_search_time=MAX_SEARCH_TIME)
    with TestClient(app) as test_client:
        yield test_client


def random_position(seeds, rng):
    """A position with `seeds` seeds on the board, either side to move, and
    captured counts that leave the game going."""
    cuts = sorted(rng.randint(0, seeds) for _ in range(11))
    houses = [b - a for a, b in zip([0] + cuts, cuts + [seeds])]
    south = rng.randint(0, min(24, 48 - seeds))
    north = rng.randint(0, min(24, 48 - seeds - south))
    return Position(houses, rng.choice("SN"), (south, north))


def ask(client, path, body):
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_values_predicted_scores_and_move_values_agree_with_the_tablebase(client, tablebase):
    rng = random.Random(5)
    positions = [random_position(n, rng) for n in range(1, 13) for _ in range(12)]
    positions += [Position.from_string("1-1-1-1-1-1/1-1-1-1-1-1 N 3:7")]  # outside the index: one ply of lookup
    checked = 0
    for position in positions:
        data = ask(client, "/api/position", {"position": str(position)})
        assert data["position"] == str(position)
        assert data["houses"] == list(position.houses) and data["to_move"] == position.to_move
        assert data["legal_moves"] == position.legal_moves()
        if position.is_over():
            assert data["over"] and data["value"] is None and data["result"] == list(position.result())
            continue
        checked += 1
        assert data["tables"] is True
        assert data["value"] == tablebase.value(position)
        assert [float(x) for x in data["predicted_result"]] == list(tablebase.predicted_result(position))
        assert {m["move"]: m["value"] for m in data["moves"]} == tablebase.move_values(position)
        assert data["best_moves"] == tablebase.best_moves(position)
        assert [m["move"] for m in data["moves"] if m["best"]] == tablebase.best_moves(position)
        for move in data["moves"]:
            child = position.play(move["move"])
            assert [float(x) for x in move["predicted_result"]] == list(tablebase.predicted_result(child))
            south, north = move["predicted_result"]
            mine, theirs = (south, north) if position.to_move == "S" else (north, south)
            assert move["outcome"] == ("win" if mine > theirs else "loss" if mine < theirs else "draw")
    assert checked > 100


def test_a_game_is_replayed_with_the_true_repetition_rule(client):
    start = "1-0-0-0-0-0/1-0-0-0-0-0 S"
    almost = ask(client, "/api/position", {"position": start, "moves": "A a B b C c D d E e F"})
    assert almost["played"] == list("AaBbCcDdEeF") and not almost["over"]
    (last,) = almost["moves"]
    assert last["move"] == "f" and last["repeats"] is True and last["repetition_result"] == [1, 1]
    done = ask(client, "/api/position", {"position": start, "moves": "1. A a 2. B b 3. C c 4. D d 5. E e 6. F f"})
    assert done["over"] and done["end"] == "repetition" and done["result"] == [1, 1] and done["outcome"] == "draw"
    assert done["legal_moves"] == [] and done["value"] is None
    more = client.post("/api/position", json={"position": start, "moves": "A a B b C c D d E e F f A"})
    assert more.status_code == 400 and "the game is over (repetition)" in more.json()["error"]


def test_a_finished_game_shows_its_final_score_and_refuses_moves(client):
    over = "2-1-1-1-1-1/0-1-1-1-1-1 S 25:11"
    data = ask(client, "/api/position", {"position": over})
    assert data["over"] and data["end"] == "25 seeds" and data["result"] == [32, 16] and data["outcome"] == "S"
    for path in ("/api/search", "/api/engine", "/api/line"):
        response = client.post(path, json={"position": over})
        assert response.status_code == 400
        assert response.json() == {"error": "the game is over (25 seeds): final score South 32, North 16"}


BAD_REQUESTS = [
    ("/api/position", b"not json"),
    ("/api/position", b"{\"position\": "),
    ("/api/position", b""),
    ("/api/position", b"[1, 2]"),
    ("/api/position", b"\"0-0-0-1-0-0/0-0-1-1-0-1 S\""),
    ("/api/position", b"[" * 20000),
    ("/api/position", b"\xff\xfe\x00garbage"),
    ("/api/position", json.dumps({"position": 12}).encode()),
    ("/api/position", json.dumps({"position": ["4"] * 12}).encode()),
    ("/api/position", json.dumps({"position": "x"}).encode()),
    ("/api/position", json.dumps({"position": ""}).encode()),
    ("/api/position", json.dumps({"position": "4-4-4-4-4-4/4-4-4-4-4-4 X"}).encode()),
    ("/api/position", json.dumps({"position": "4-4-4-4-4-4/4-4-4-4-4-4 S 30:30"}).encode()),
    ("/api/position", json.dumps({"position": "-1-4-4-4-4-4/4-4-4-4-4-4"}).encode()),
    ("/api/position", json.dumps({"position": "99999999999999999999-0-0-0-0-0/0-0-0-0-0-0"}).encode()),
    ("/api/position", json.dumps({"position": "4" * 5000}).encode()),
    ("/api/position", json.dumps({"position": "../../etc/passwd"}).encode()),
    ("/api/position", json.dumps({"moves": "1. F F"}).encode()),
    ("/api/position", json.dumps({"moves": "1. Z"}).encode()),
    ("/api/position", json.dumps({"moves": "F " * 6000}).encode()),
    ("/api/position", json.dumps({"moves": 5}).encode()),
    ("/api/position", json.dumps({"side": "S"}).encode()),
    ("/api/line", json.dumps({"max_plies": 0}).encode()),
    ("/api/line", json.dumps({"position": "0-0-0-1-0-0/0-0-1-1-0-1 S", "max_plies": 10 ** 30}).encode()),
    ("/api/line", json.dumps({"position": "0-0-0-1-0-0/0-0-1-1-0-1 S", "max_plies": True}).encode()),
    ("/api/line", json.dumps({"position": "0-0-0-1-0-0/0-0-1-1-0-1 S", "max_plies": 2.5}).encode()),
    ("/api/line", json.dumps({}).encode()),  # the opening: no table for 48 seeds
    ("/api/search", json.dumps({"time": -1}).encode()),
    ("/api/search", json.dumps({"time": 0}).encode()),
    ("/api/search", json.dumps({"time": "1"}).encode()),
    ("/api/search", json.dumps({"time": True}).encode()),
    ("/api/search", b"{\"time\": NaN}"),
    ("/api/search", b"{\"time\": Infinity}"),
    ("/api/search", b"{\"time\": 1e999}"),
    ("/api/search", json.dumps({"cycles": "both"}).encode()),
    ("/api/search", json.dumps({"move_values": "yes"}).encode()),
    ("/api/engine", json.dumps({"time": -5}).encode()),
    ("/api/engine", json.dumps({"position": "0-0-0-0-0-0/0-0-0-0-0-0 Z"}).encode()),
    ("/api/analyse", json.dumps({}).encode()),
    ("/api/analyse", json.dumps({"record": ""}).encode()),
    ("/api/analyse", json.dumps({"record": "1."}).encode()),
    ("/api/analyse", json.dumps({"record": "1. F F"}).encode()),
    ("/api/analyse", json.dumps({"record": "1. F", "time_per_ply": -1}).encode()),
    ("/api/analyse", json.dumps({"record": "1. F", "position": "nonsense"}).encode()),
]


@pytest.mark.parametrize("path, body", BAD_REQUESTS)
def test_bad_requests_get_400_with_one_clear_message(client, path, body):
    response = client.post(path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    data = response.json()
    assert set(data) == {"error"} and isinstance(data["error"], str) and data["error"]
    assert "\n" not in data["error"] and "Traceback" not in data["error"] and len(data["error"]) < 400


def test_bodies_over_the_limit_and_other_content_types_are_400(client):
    big = client.post("/api/position", content=b"{\"moves\": \"" + b"F " * MAX_BODY_BYTES + b"\"}",
                      headers={"content-type": "application/json"})
    assert big.status_code == 400 and "larger than" in big.json()["error"]
    form = client.post("/api/position", data={"position": "0-0-0-1-0-0/0-0-1-1-0-1 S"})
    assert form.status_code == 400 and form.json()["error"]
    wrong_method = client.get("/api/position")
    assert wrong_method.status_code == 405 and wrong_method.json() == {"error": "method not allowed"}


@pytest.mark.parametrize("path", [
    "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2fapp.py", "/static/app.js", "/static/../app.py",
    "/app.py", "/oracle.py", "/index.html", "/static/index.html", "/app.js%00.py", "/app.js/..%2f..%2fapp.py",
    "/api/../app.py", "//etc/passwd", "/solver/web/app.py", "/" + "a" * 5000,
])
def test_no_path_from_a_request_reaches_the_filesystem(client, path):
    response = client.get(path)
    assert response.status_code == 404 and response.json() == {"error": "not found"}


def test_raw_paths_with_dot_segments_are_not_found(client):
    # The test client normalises "..", so the app is called as a server would
    # call it with the raw path.
    app = client.app
    for raw in ("/../../etc/passwd", "/./app.js/../../web/app.py", "/static/../../pyproject.toml"):
        scope = {"type": "http", "method": "GET", "path": raw, "raw_path": raw.encode(), "query_string": b"",
                 "headers": [], "http_version": "1.1", "scheme": "http", "server": ("testserver", 80),
                 "client": ("testclient", 1), "root_path": ""}
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        import anyio

        anyio.run(app, scope, receive, send)
        assert sent[0]["status"] == 404, raw


def test_the_page_is_fixed_files_from_the_package(client):
    from importlib import resources

    folder = resources.files("solver.web") / "static"
    for path, (name, media) in STATIC_FILES.items():
        response = client.get(path)
        assert response.status_code == 200
        assert response.content == (folder / name).read_bytes()
        assert response.headers["content-type"] == media
        assert "default-src 'self'" in response.headers["content-security-policy"]
    page = client.get("/").text
    assert "/app.js" in page and "/style.css" in page and "http" not in page  # nothing from elsewhere: works offline
    # No route takes a path parameter, and nothing is mounted: a request's
    # path can only select one of the fixed routes.
    for route in client.app.routes:
        assert "{" not in route.path and type(route).__name__ != "Mount", route.path


def test_the_api_documentation_is_the_packages_own_page_and_works_offline(client):
    """/docs is a page of the package that renders /openapi.json; nothing on it
    or in its script and style comes from elsewhere (FastAPI's own /docs and
    /redoc load theirs from a public CDN, blank without a network: they are off)."""
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/docs.js" in page.text and "/docs.css" in page.text
    for path in ("/docs", "/docs.js", "/docs.css", "/openapi.json"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert not re.search(r"https?://", response.text if path != "/openapi.json" else ""), path
    assert "fetch(\"/openapi.json\")" in client.get("/docs.js").text
    assert client.get("/redoc").status_code == 404
    assert client.get("/docs/oauth2-redirect").status_code == 404


def test_info_openapi_and_server_timing(client, table_dir):
    info = client.get("/api/info").json()
    assert info["layers"] == list(range(13)) and info["max_search_time"] == MAX_SEARCH_TIME
    schema = client.get("/openapi.json").json()
    endpoints = {"/api/position", "/api/line", "/api/search", "/api/engine", "/api/analyse", "/api/info"}
    assert endpoints <= set(schema["paths"])
    response = client.post("/api/position", json={})
    assert response.headers["server-timing"].startswith("app;dur=")


def test_the_page_words_the_repetition_rules_as_the_api_does(client):
    """/api/info gives every rule's words (report.Rule.describe, as the CLI and
    UCI say them) and which is the game's own; the page says a rule only in
    those words, never in its own."""
    rules = client.get("/api/info").json()["rules"]
    assert rules == [rule.as_dict() for rule in Rule]
    assert {(r["rule"], r["cycles"], r["default"]) for r in rules} == {("true", "own", True),
                                                                        ("split", "split", False)}
    assert [r["text"] for r in rules] == [Rule.TRUE.describe(), Rule.SPLIT.describe()]
    assert set(CYCLES) == {r["cycles"] for r in rules}  # every word a request takes is worded
    page = client.get("/app.js").text
    for words in ("endless play", "even split", "convention", "true rule", *(rule.describe() for rule in Rule)):
        assert words not in page, words
    assert "info.rules" in page and "ruleText(" in page


def test_the_line_is_the_tablebase_line(client, tablebase):
    for text in ("0-0-0-1-0-0/0-0-1-1-0-1 S", "0-1-2-0-1-1/2-0-1-0-0-1 N 3:4", "2-0-0-0-0-0/1-0-0-0-0-0 S"):
        position = Position.from_string(text)
        expected = tablebase.line(position)
        data = ask(client, "/api/line", {"position": text})
        assert data["moves"] == expected.moves and data["captures"] == expected.captures
        assert data["end"] == expected.end_reason and data["value"] == expected.value
        assert [float(x) for x in data["result"]] == list(expected.result)
        short = ask(client, "/api/line", {"position": text, "max_plies": 2})
        assert short["moves"] == expected.moves[:2]


def test_search_above_the_tables_says_whether_it_is_exact_and_caps_the_time(client, tablebase):
    start = Position.from_string("0-0-3-0-0-1/2-2-0-2-2-2 S")  # 14 seeds: above the tables to 12
    data = ask(client, "/api/search", {"position": str(start), "time": 1000})
    assert data["time"] == MAX_SEARCH_TIME
    assert data["move"] in start.legal_moves() and isinstance(data["exact"], bool)
    assert isinstance(data["value"], int) and data["source"] in ("search", "component")
    assert [m["move"] for m in data["moves"]] == start.legal_moves()
    assert all(isinstance(m["exact"], bool) and m["outcome"] in ("win", "draw", "loss") for m in data["moves"])
    best = max(m["value"] for m in data["moves"])
    assert [m["best"] for m in data["moves"]] == [m["value"] == best for m in data["moves"]]
    # One search valued every move: the position's value is its best move's, and the page's
    # "Best" (the move) is starred.
    assert data["value"] == best and data["move"] in [m["move"] for m in data["moves"] if m["best"]]
    for move in data["moves"]:  # a move that captures into the tables is valued from them
        child = start.play(move["move"])
        if child.seeds <= 12:
            assert move["exact"] and move["value"] == move["captured"] - tablebase.value(child)
    quick = ask(client, "/api/search", {"position": str(start), "time": 0.05, "move_values": False})
    assert quick["moves"] is None and quick["time"] == 0.05
    # Too short for one ply: a legal move and no value, never an error.
    instant = ask(client, "/api/search", {"position": str(start), "time": 1e-9})
    assert instant["move"] in start.legal_moves()
    assert all(m["value"] is None or isinstance(m["value"], int) for m in instant["moves"])
    table = ask(client, "/api/search", {"position": "0-1-2-0-1-1/2-0-1-0-0-1 S"})
    assert table["exact"] and table["source"] == "table"
    assert table["value"] == tablebase.value("0-1-2-0-1-1/2-0-1-0-0-1 S")


@pytest.mark.slow  # 10-50 s: CI runs it on its own line (.ci/run)
def test_awele_plays_perfect_moves_from_the_tables_and_searches_above(client, tablebase):
    rng = random.Random(8)
    progress_cases = searched = 0
    for _ in range(60):
        position = random_position(rng.randint(4, 12), rng)
        if position.is_over():
            continue
        answer = ask(client, "/api/engine", {"position": str(position), "time": 100})
        if abs(tablebase.value(position)) != position.seeds:
            # A value that may rest on endless play: searched under the true rule.
            assert answer["move"] in position.legal_moves()
            if answer["source"] == "component":  # proven by the true rule's graph (solver.engine)
                assert answer["exact"] is True and answer["rule"] == "true", answer
                searched += 1
                continue
            if answer["source"] == "search":
                assert answer["search"]["rule"] == "true" or not answer["exact"]
                searched += 1
                continue
        assert answer["source"] == "table" and answer["exact"] is True
        # Best by the rules of the game: a move that ends it (25 seeds) is worth what the end gives.
        in_game = tablebase.game_moves(Game(position))
        assert answer["move"] in [m.move for m in best_of(in_game)], position
        if all(m.outcome.reason is None for m in in_game):
            assert answer["move"] in tablebase.best_moves(position), position  # no end: the tables' best
        if tablebase.best_move(Game(position), progress=False) is None:
            # A winner's choice among quiet best moves: the tables' line picks it.
            progress_cases += 1
            assert answer["move"] == tablebase.line(position, max_plies=1).moves[0]
    assert progress_cases > 0 and searched > 0
    above = ask(client, "/api/engine", {"moves": "1. F b", "time": 1000})
    assert above["source"] == "search" and above["move"] in Game.from_record("1. F b").legal_moves()
    assert above["search"]["position"] == above["position"] == str(Game.from_record("1. F b").position)


def test_the_page_says_plus_two_for_the_cycle_where_the_true_rule_gives_it(client):
    """The engine and the search give the true rule's +2 (solver.engine); the
    tables' quick look gives their +0 and says it is their convention."""
    cycle = "1-0-0-0-0-1/0-0-0-0-0-0 S 23:23"
    move = ask(client, "/api/engine", {"position": cycle, "time": 0.5})
    assert (move["move"], move["value"], move["exact"], move["rule"]) == ("F", 2, True, "true"), move
    searched = ask(client, "/api/search", {"position": cycle, "time": 0.5})
    assert (searched["value"], searched["exact"], searched["rule"]) == (2, True, "true"), searched
    assert searched["predicted_result"] == [25, 23]
    quick = ask(client, "/api/position", {"position": cycle})
    assert (quick["value"], quick["rule"]) == (0, "split")


def test_awele_takes_a_repetition_when_it_gives_more_than_the_table_value(tablebase):
    # 1-0-0-0-0-1/0-0-0-0-0-0 S is worth 0 by the tables, but its forced cycle
    # returns with both seeds on South's side: the true rule gives South 2:0.
    game = Game.from_record("F a A b B c C d D e E", Position.from_string("1-0-0-0-0-1/0-0-0-0-0-0 S"))
    assert game.legal_moves() == ["f"]
    data = engine.position_report(tablebase, game)
    (only,) = data["moves"]
    assert only["repeats"] and only["repetition_result"] == [2, 0]
    assert tablebase.best_move(game).move == "f"


def test_analysis_is_the_analyse_function(client, table_dir):
    start = "0-1-2-0-1-1/2-0-1-0-0-1 S 10:9"
    record = "1. C c 2. B a"
    data = ask(client, "/api/analyse", {"record": record, "position": start, "time_per_ply": 1000})
    assert data["time_per_ply"] == MAX_SEARCH_TIME
    with Tablebase(table_dir) as tablebase:
        # The same time a ply: the true rule's graph gets as many positions (solver.analysis).
        expected = analyse(record, tablebase, start=start, time_per_ply=MAX_SEARCH_TIME).as_dict()
    assert data["plies"] == expected["plies"] and data["summary"] == expected["summary"]
    assert data["record"] == record and data["start"] == start


def test_a_job_past_its_time_limit_is_stopped_and_the_next_one_runs(table_dir):
    app = create_app(table_dir, max_search_time=0.2, max_line_time=0.001)
    with TestClient(app) as slow_client:
        stopped = slow_client.post("/api/line", json={"position": "0-1-2-0-1-1/2-0-1-0-0-1 S"})
        assert stopped.status_code == 503 and "took longer than 0.001 s" in stopped.json()["error"]
        again = slow_client.post("/api/search", json={"position": "0-0-3-0-0-1/2-2-0-2-2-2 S", "time": 0.1,
                                                      "move_values": False})
        assert again.status_code == 200 and again.json()["move"]


def test_serve_refuses_a_missing_folder_a_busy_port_and_a_missing_extra(tmp_path, table_dir, monkeypatch):
    runner = CliRunner()
    missing = runner.invoke(cli, ["serve", "--dir", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2
    assert missing.output.strip().splitlines() == [f"awele: error: no tables folder {tmp_path / 'nowhere'}: "
                                                   "build tables with `awele build`, or give --dir"]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = runner.invoke(cli, ["serve", "--dir", table_dir, "--port", str(port)])
    assert busy.exit_code == 2 and busy.output.startswith(f"awele: error: cannot listen on 127.0.0.1:{port}: ")
    assert len(busy.output.strip().splitlines()) == 1
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if the web extra were not installed
    absent = runner.invoke(cli, ["serve", "--dir", table_dir])
    assert absent.exit_code == 2
    assert absent.output.strip() == "awele: error: the web oracle needs the web extra: pip install 'awele[web]'"
