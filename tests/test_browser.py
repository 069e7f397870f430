"""The oracle's page in a real browser: headless Chromium, driven through
chromedriver, against a server on the test tables (layers 0..12).

Chromedriver is driven through its W3C WebDriver HTTP API with urllib (a
dozen commands), so the test needs no client library; `.ci/run` installs
Debian's chromium and chromium-driver. Marked `browser`: left out of the
default run, selected with `python -m pytest -m browser`.
"""

import base64
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from solver import Game, Position  # noqa: E402
from solver.report import Rule  # noqa: E402
from solver.web import create_app  # noqa: E402
from solver.web.app import listening_socket  # noqa: E402

pytestmark = pytest.mark.browser

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
WAIT_SECONDS = 60  # longest wait for the page to show something before the test fails


def _find(*names):
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WebDriver:
    """The few WebDriver commands the test uses, over HTTP."""

    def __init__(self, url):
        self.url = url
        self.session = None

    def command(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=WAIT_SECONDS) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            raise AssertionError(f"webdriver {method} {path}: {error.read().decode()[:500]}") from None

    def start(self, chromium):
        options = {"binary": chromium, "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                                "--disable-dev-shm-usage", "--window-size=1280,1000"]}
        answer = self.command("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options}}})
        self.session = answer["sessionId"]

    def call(self, method, path, body=None):
        return self.command(method, f"/session/{self.session}{path}", body)

    def open(self, url):
        self.call("POST", "/url", {"url": url})

    def element(self, css):
        return self.call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        self.call("POST", f"/element/{self.element(css)}/click", {})

    def type(self, css, text):
        element = self.element(css)
        self.call("POST", f"/element/{element}/clear", {})
        self.call("POST", f"/element/{element}/value", {"text": text})

    def script(self, source, *args):
        return self.call("POST", "/execute/sync", {"script": source, "args": list(args)})

    def screenshot(self):
        return base64.b64decode(self.call("GET", "/screenshot"))

    def quit(self):
        if self.session:
            self.command("DELETE", f"/session/{self.session}")


@pytest.fixture(scope="module")
def server(table_dir):
    """The oracle on a free local port, in a thread; its base URL."""
    app = create_app(table_dir, max_search_time=0.5)
    listener = listening_socket("127.0.0.1", 0)
    port = listener.getsockname()[1]
    uvicorn_server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_SECONDS
    while not uvicorn_server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    uvicorn_server.should_exit = True
    thread.join(WAIT_SECONDS)
    listener.close()


@pytest.fixture(scope="module")
def browser():
    chromium = _find("chromium", "chromium-browser", "google-chrome")
    chromedriver = _find("chromedriver")
    if not chromium or not chromedriver:
        pytest.skip("needs chromium and chromedriver (apt-get install chromium chromium-driver)")
    port = _free_port()
    process = subprocess.Popen([chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = WebDriver(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            if driver.command("GET", "/status").get("ready"):
                break
        except (urllib.error.URLError, ConnectionError, AssertionError):
            pass
        assert time.monotonic() < deadline and process.poll() is None, "chromedriver did not start"
        time.sleep(0.1)
    try:
        driver.start(chromium)
        yield driver
    finally:
        driver.quit()
        process.terminate()
        process.wait(WAIT_SECONDS)


SHOWN = """
const board = document.getElementById("board");
const values = {};
for (const house of document.querySelectorAll(".house.legal")) {
  values[house.dataset.house] = house.querySelector(".mv").textContent;
}
return {position: board.dataset.position || null, state: board.dataset.state, engine: board.dataset.engine || null,
        search: board.dataset.search || null, values: values,
        value: document.getElementById("value").textContent,
        predicted: document.getElementById("predicted").textContent,
        best: document.getElementById("best").textContent,
        source: document.getElementById("source").textContent,
        error: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent,
        url: location.href};
"""


def wait_for(driver, check, what):
    """Poll the page until check(shown) holds; the last state shown if it never does."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        shown = driver.script(SHOWN)
        if shown["state"] == "ready" and check(shown):
            return shown
        assert time.monotonic() < deadline, f"waiting for {what}; the page shows {shown}"
        time.sleep(0.05)


def wait_for_position(driver, position, engine_done=False):
    return wait_for(driver, lambda s: s["position"] == str(position) and (not engine_done or s["engine"] != "thinking"),
                    f"position {position}")


def shown_values(shown):
    """{house: value} from the marks drawn on the houses ('+2 ★' -> 2)."""
    return {house: int(text.split()[0].rstrip("~")) for house, text in shown["values"].items()}


def signed(value):
    return f"+{value}" if value > 0 else str(value)


def check_values(shown, position, tablebase):
    assert shown["error"] == ""
    assert shown_values(shown) == tablebase.move_values(position), position
    value = tablebase.value(position)
    assert shown["value"].startswith(f"{signed(value)} for {'South' if position.to_move == 'S' else 'North'}")
    south, north = tablebase.predicted_result(position)
    assert shown["predicted"].startswith(f"South {south:g} \u2013 North {north:g}")
    best = tablebase.best_moves(position)
    assert shown["best"] == " ".join(best)
    assert all(("\u2605" in text) == (house in best) for house, text in shown["values"].items())
    # The rule in the server's words (/api/info's rules, report.Rule.describe).
    assert any(shown["source"] == f"the tables: exact, under {rule.describe()}" for rule in Rule), shown["source"]


def test_play_by_clicking_undo_redo_and_check_the_values(server, browser, tablebase, tmp_path):
    start = Position.from_string("0-1-2-0-3-1/2-0-1-0-2-0 S 13:10")  # 12 seeds: in the tables
    query = urllib.parse.urlencode({"position": str(start)})
    browser.open(f"{server}/?{query}")
    shown = wait_for_position(browser, start)
    check_values(shown, start, tablebase)

    positions = [start]
    for _ in range(3):  # click a best move three times, checking what each position shows
        current = positions[-1]
        move = tablebase.best_moves(current)[0]
        browser.click(f"#house-{move}")
        positions.append(current.play(move))
        shown = wait_for_position(browser, positions[-1])
        if positions[-1].is_over():
            break
        check_values(shown, positions[-1], tablebase)
    assert "moves=" in shown["url"]

    browser.click("#undo")
    shown = wait_for_position(browser, positions[-2])
    check_values(shown, positions[-2], tablebase)
    browser.click("#redo")
    shown = wait_for_position(browser, positions[-1])

    # The perfect line from the position shown, as the Tablebase plays it.
    if not positions[-1].is_over():
        browser.click("#show-line")
        expected = tablebase.line(positions[-1])
        wait_for(browser, lambda s: browser.script("return !document.getElementById('line').hidden"), "the line")
        text = browser.script("return document.getElementById('line').textContent")
        played = [part.split("(")[0] for part in text.split("\u2014")[0].split()]
        assert played == expected.moves and f"ends: {expected.end_reason}" in text

    (tmp_path / "oracle.png").write_bytes(browser.screenshot())
    assert (tmp_path / "oracle.png").read_bytes().startswith(b"\x89PNG")

    # The URL holds the game: opening it again shows the same position.
    browser.open(shown["url"])
    wait_for_position(browser, positions[-1])


def test_play_against_perfect_play_and_set_up_positions(server, browser, tablebase, tmp_path):
    start = Position.from_string("1-2-0-2-1-0/1-0-2-1-1-0 S 4:3")  # 11 seeds
    query = urllib.parse.urlencode({"position": str(start), "engine": "N"})
    browser.open(f"{server}/?{query}")
    wait_for_position(browser, start)
    move = tablebase.best_moves(start)[0]
    browser.click(f"#house-{move}")
    after = start.play(move)
    # awele answers for North with a best move from the tables.
    shown = wait_for(browser, lambda s: s["position"] not in (str(start), str(after)) and s["engine"] != "thinking",
                     "awele's answer")
    answers = [m for m in tablebase.best_moves(after) if str(after.play(m)) == shown["position"]]
    assert answers, f"awele's move from {after} is not a best move: {shown['position']}"
    # The set-up panel holds the position on the board, not the opening.
    editor = browser.script("return [...'ABCDEFabcdef'].map(l => Number(document.getElementById('edit-' + l).value))"
                            ".concat([document.getElementById('edit-side').value])")
    on_board = Position.from_string(shown["position"])
    assert editor == [*on_board.houses, on_board.to_move]

    # A position typed into the editor.
    browser.click("#edit-opening")
    wait_for_position(browser, Position.initial())
    typed = Position.from_string("0-0-0-1-0-0/0-0-1-1-0-1 N 7:9")
    for letter, count in zip("ABCDEFabcdef", typed.houses):
        browser.type(f"#edit-{letter}", str(count))
    browser.script("document.getElementById('edit-side').value = 'N';")
    browser.type("#edit-captured-S", "7")
    browser.type("#edit-captured-N", "9")
    browser.script("document.getElementById('engine').value = 'none'; "
                   "document.getElementById('engine').dispatchEvent(new Event('change'));")
    browser.click("#edit-form button[type=submit]")
    check_values(wait_for_position(browser, typed), typed, tablebase)

    # A game record pasted: the page asks the server to replay it.
    browser.type("#paste", "1. F b 2. D a")
    browser.click("#paste-form button[type=submit]")
    replayed = str(Game.from_record("1. F b 2. D a").position)
    shown = wait_for(browser, lambda s: s["position"] == replayed or s["error"], "the record")
    assert shown["error"] == "" and "moves=F+b+D+a" in shown["url"]
    # Above the tables the page searches and marks each value exact or not.
    shown = wait_for(browser, lambda s: s["search"] == "done", "the search")
    assert set(shown["values"]) == set(Position.from_string(shown["position"]).legal_moves())
    assert "for South" in shown["value"] and shown["error"] == ""
    assert any(f"under {rule.describe()})" in shown["value"] for rule in Rule), shown["value"]
    (tmp_path / "oracle-search.png").write_bytes(browser.screenshot())

    # The analysis of the game played: a row per ply, marks as solver.analysis gives them.
    browser.type("#analyse-time", "0.05")
    browser.click("#analyse")
    rows = None
    deadline = time.monotonic() + WAIT_SECONDS
    while rows is None:
        state = browser.script("return document.getElementById('analysis-result').dataset.state || ''")
        assert state != "error" and time.monotonic() < deadline, f"analysis: {state}"
        if state == "done":
            rows = browser.script("return [...document.querySelectorAll('#analysis-result tbody tr')]"
                                  ".map(row => row.cells[1].textContent)")
        time.sleep(0.05)
    assert [row.rstrip("?!") for row in rows] == ["1. F", "1... b", "2. D", "2... a"]

    # A bad position in the URL says why and shows the opening.
    browser.open(f"{server}/?position=9-9-9-9-9-9/9-9-9-9-9-9")
    shown = wait_for(browser, lambda s: s["error"] != "", "an error")
    assert "seeds in houses and stores" in shown["error"]
    (tmp_path / "oracle-setup.png").write_bytes(browser.screenshot())


DISTANCES = """
const shown = {};
for (const house of document.querySelectorAll(".house.legal")) {
  shown[house.dataset.house] = [house.querySelector(".dist").textContent, house.title];
}
return shown;
"""


def test_each_house_shows_its_move_s_distance(server, browser, tablebase):
    """Under each move's value the page shows its distance to conversion
    (none for a value of 0), as the move records carry it."""
    start = Position.from_string("2-0-1-0-3-1/0-2-0-1-0-1 S")  # worth -1: distances to hold out by
    browser.open(f"{server}/?{urllib.parse.urlencode({'position': str(start)})}")
    wait_for_position(browser, start)
    shown = browser.script(DISTANCES)
    moves = tablebase.moves(start)
    assert any(m.distance for m in moves)
    for m in moves:
        text, title = shown[m.move]
        assert text == ("" if m.distance is None else str(m.distance)), (m, text)
        assert (f"in {m.distance} pl" in title or "a capture: 1 ply" in title) == (m.distance is not None), title
