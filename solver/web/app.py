"""The web oracle: a FastAPI app over one tables folder.

    from solver.web import create_app
    app = create_app("databases")          # then: uvicorn, or `awele serve`

Table lookups (value, predicted score, move values) are answered in the
server process from a lazily opened Tablebase: small layers are read whole
on first use, larger ones a checked chunk at a time, so start-up reads
nothing and a layer of 25 seeds or more is never read whole. Searches,
perfect lines and analyses run in a worker process (solver.web.worker) with
time limits the server caps. Every bad request gets a 400 with
{"error": "one message"}; the server reads tables and never writes them, and
serves only its own static files (the page and the API's documentation
page), by fixed names.

FastAPI was chosen over bare Starlette for its request models: validation,
one place for the limits of every field, and the OpenAPI description at
/openapi.json for free; the package's own page renders it at /docs (FastAPI's
Swagger and ReDoc pages load their script from a CDN, so they are off).
"""

from __future__ import annotations

import json
import math
import os
import socket
import time as _time
from contextlib import asynccontextmanager
from importlib import resources

import anyio
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..engine import parse_game, position_report, table_message, warm_up
from ..errors import (
    AweleError,
    GameOverError,
    InvalidArgumentError,
    MissingTableError,
    TableError,
)
from ..limits import CYCLES
from ..position import Game
from ..probe import Tablebase
from ..report import Rule
from ..version import __version__
from .worker import JobError, JobTimeout, Worker

DEFAULT_MAX_SEARCH_TIME = 10.0  # seconds a search may be given, whatever the request asks
DEFAULT_MAX_LINE_TIME = 30.0  # seconds a line or a perfect-play move may take before it is stopped
DEFAULT_MAX_ANALYSIS_TIME = 120.0  # seconds of search an analysis may spend in all
MAX_POSITION_CHARS = 200
MAX_RECORD_CHARS = 10_000
MAX_LINE_PLIES = 400
MAX_BODY_BYTES = 64 * 1024
MAX_WAITING_JOBS = 4  # slow requests queued behind the running one; more get a 503
JOB_GRACE = 30.0  # seconds a job may run past its time budget (table reads, line extension) before it is stopped

STATIC_FILES = {  # URL path -> (file in solver/web/static, media type): the only files served
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
    # The API's documentation, rendered from /openapi.json by the package's own page:
    # FastAPI's /docs and /redoc load their script and style from a public CDN.
    "/docs": ("docs.html", "text/html; charset=utf-8"),
    "/docs.js": ("docs.js", "text/javascript; charset=utf-8"),
    "/docs.css": ("docs.css", "text/css; charset=utf-8"),
}
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}

# Requests ----------------------------------------------------------------------

_POSITION_FIELD = Field(
    None, max_length=MAX_POSITION_CHARS,
    description="The start position, 'A-B-C-D-E-F/a-b-c-d-e-f SIDE S:N' or 12 integers; the opening when left out.",
    examples=["0-1-2-0-3-1/2-0-1-3-2-1 S 20:12"],
)
_MOVES_FIELD = Field(
    "", max_length=MAX_RECORD_CHARS,
    description="Moves played from the position, e.g. '1. F b 2. D a'; their positions count for repetitions.",
    examples=[""],
)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GameRequest(_Request):
    """A position, or a game: a start position and the moves played from it."""

    position: str | None = _POSITION_FIELD
    moves: str = _MOVES_FIELD


class LineRequest(GameRequest):
    max_plies: int = Field(200, ge=1, le=MAX_LINE_PLIES, strict=True, description="Longest line returned.")


class SearchRequest(GameRequest):
    time: float = Field(1.0, gt=0, allow_inf_nan=False, strict=True,
                        description="Seconds to search; the server caps it (see /api/info).")
    cycles: str = Field(Rule.TRUE.cycles, pattern=f"^({'|'.join(CYCLES)})$",
                        description=f"Repetition: own = {Rule.TRUE.describe()} over the game; "
                        f"split = {Rule.SPLIT.describe()}.")
    move_values: bool = Field(True, strict=True,
                              description="Also search every legal move (half the time for the position, "
                                          "half shared by the moves).")


class EngineRequest(GameRequest):
    time: float = Field(1.0, gt=0, allow_inf_nan=False, strict=True,
                        description="Seconds to search above the tables; the server caps it.")


class AnalyseRequest(_Request):
    record: str = Field(..., min_length=1, max_length=MAX_RECORD_CHARS, description="The game, e.g. '1. F b 2. D a'.",
                        examples=["1. F b 2. D a"])
    position: str | None = _POSITION_FIELD
    time_per_ply: float = Field(1.0, gt=0, allow_inf_nan=False, strict=True,
                                description="Seconds of search for a ply above the tables; the server caps it.")


# Errors ------------------------------------------------------------------------


class ServiceError(Exception):
    """A request the server cannot answer now (busy, a job too long, damaged tables): 503."""


def _error(status, message):
    return JSONResponse({"error": message}, status_code=status)


def _validation_message(errors):
    """One clear line from pydantic's list of errors (the first one)."""
    if not errors:
        return "invalid request"
    error = errors[0]
    kind = error.get("type", "")
    where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
    if kind == "json_invalid":
        return "the request body is not valid JSON"
    if kind == "missing" and not where:
        return "the request needs a JSON object as its body"
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        return "the request body must be a JSON object"
    if kind == "extra_forbidden":
        return f"unknown field {where!r}"
    if kind == "missing":
        return f"{where}: required"
    return f"{where}: {error.get('msg', 'invalid')}" if where else error.get("msg", "invalid request")


def _install_error_handlers(app):
    @app.exception_handler(RequestValidationError)
    async def invalid_request(request, error):
        return _error(400, _validation_message(error.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request, error):
        message = {404: "not found", 405: "method not allowed"}.get(error.status_code, str(error.detail))
        if error.status_code == 400 and "parsing the body" in str(error.detail):
            message = "the request body is not valid JSON"
        return _error(error.status_code, message)

    @app.exception_handler(AweleError)
    async def awele_error(request, error):
        # Table errors first: a damaged table is a ValueError too, but the server's fault.
        if isinstance(error, MissingTableError):
            return _error(400, table_message(error))
        if isinstance(error, TableError):
            return _error(500, table_message(error))
        return _error(400, str(error))

    @app.exception_handler(JobError)
    async def job_error(request, error):
        return _error(400 if error.user else error.status, str(error))

    @app.exception_handler(JobTimeout)
    async def job_timeout(request, error):
        return _error(503, f"the computation {error}")

    @app.exception_handler(ServiceError)
    async def service_error(request, error):
        return _error(503, str(error))


# Middleware --------------------------------------------------------------------


class _BodyLimitAndTiming:
    """Pure ASGI middleware: reads a request body up to MAX_BODY_BYTES (a longer
    one gets a 400 before the app sees it) and adds a Server-Timing header with
    the time the app took."""

    def __init__(self, app, limit=MAX_BODY_BYTES):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await _send_json(send, 400, {"error": f"the request body is larger than {self.limit} bytes"})
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        started = _time.perf_counter()

        async def timed_send(message):
            if message["type"] == "http.response.start":
                took = (_time.perf_counter() - started) * 1000
                message = dict(message)
                timing = (b"server-timing", f"app;dur={took:.2f}".encode())
                message["headers"] = list(message.get("headers", [])) + [timing]
            await send(message)

        await self.app(scope, replay, timed_send)


async def _send_json(send, status, data):
    payload = json.dumps(data).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


# The app -----------------------------------------------------------------------


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) and listening, for uvicorn.Server.run(sockets=...).

    Made with protocol IPPROTO_TCP, not 0 as socket.create_server makes it:
    asyncio sets TCP_NODELAY only on connections accepted from such a socket,
    and without it Nagle's algorithm holds each response body about 40 ms
    behind its headers. Raises OSError when the address is taken or unknown.
    """
    family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                            flags=socket.AI_PASSIVE)[0]
    listener = socket.socket(family, kind, protocol or socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(128)
    except BaseException:
        listener.close()
        raise
    return listener


def _static_files():
    """The page's files, read once from the package: {URL path: (bytes, media type)}."""
    folder = resources.files("solver.web") / "static"
    return {path: ((folder / name).read_bytes(), media) for path, (name, media) in STATIC_FILES.items()}


def _check_limit(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def _tables_folder(directory):
    """The tables folder to serve: `directory`, else tables.default_directory(); an InvalidArgumentError if none."""
    from .. import tables

    directory = os.fspath(directory) if directory is not None else tables.default_directory()
    if not os.path.isdir(directory):
        raise InvalidArgumentError(f"no tables folder {directory}: build tables with `awele build`, or give --dir")
    return directory


def _game_of(request):
    """The Game a request names: its position (the opening when None) and its moves."""
    return parse_game(request.position, request.moves)


def _refuse_finished(game):
    """A GameOverError for a finished game, with its final score."""
    if game.is_over():
        south, north = game.result()
        raise GameOverError(f"the game is over ({game.end_reason}): final score South {south:g}, North {north:g}")


def _lifespan(tablebase, worker, limiters, start_worker):
    """The app's start and end: the limiters made, the worker started (with
    `start_worker`), the kernels loaded; at the end the worker and the tables closed."""

    @asynccontextmanager
    async def lifespan(app):
        # One thread at a time reads the tablebase (its chunk caches are not
        # thread-safe); one job at a time goes to the worker.
        limiters["fast"] = anyio.CapacityLimiter(1)
        limiters["slow"] = anyio.CapacityLimiter(1)
        if start_worker:
            await anyio.to_thread.run_sync(worker.start)
        # Load the compiled kernels now rather than in the first request.
        await anyio.to_thread.run_sync(warm_up, tablebase, limiter=limiters["fast"])
        try:
            yield
        finally:
            worker.close()
            tablebase.close()

    return lifespan


def _new_app(lifespan, static):
    """The FastAPI app with its middleware, error handlers and pages (fixed
    files: nothing from the request reaches the filesystem)."""
    app = FastAPI(
        title="awele oracle",
        version=__version__,
        description="Exact values of Awele (Oware, Abapa rules) positions from the endgame tables, and search "
                    "above them. A value is the seeds the side to move captures from now on minus the seeds the "
                    "other side captures, under perfect play. Errors: 400 with {\"error\": message} for a bad "
                    "request; 500 naming the layer when one of the server's tables is damaged; 503 when the "
                    "server is busy or a computation ran past its limit.",
        lifespan=lifespan,
        docs_url=None,  # served from STATIC_FILES instead: works without a network
        redoc_url=None,
    )
    app.add_middleware(_BodyLimitAndTiming)
    _install_error_handlers(app)

    def page(path):
        content, media = static[path]
        return Response(content, media_type=media, headers=PAGE_HEADERS)

    for path in STATIC_FILES:
        app.add_api_route(path, (lambda path=path: page(path)), methods=["GET"], include_in_schema=False)
    return app


def create_app(directory: str | os.PathLike | None = None, max_search_time: float = DEFAULT_MAX_SEARCH_TIME,
               max_line_time: float = DEFAULT_MAX_LINE_TIME, max_analysis_time: float = DEFAULT_MAX_ANALYSIS_TIME,
               start_worker: bool = True) -> FastAPI:
    """The oracle app on the tables in `directory` (tables.default_directory()
    when None).

    max_search_time caps the time a request may give a search (or an engine
    move, or one ply of an analysis); max_line_time is how long a perfect
    line may run before it is stopped; max_analysis_time caps the search
    time of a whole analysis. With start_worker the search process is started
    when the app starts (it opens its tables in the background), else on the
    first request that needs it.
    """
    directory = _tables_folder(directory)
    max_search_time, max_line_time, max_analysis_time = (_check_limit(name, value) for name, value in (
        ("max_search_time", max_search_time), ("max_line_time", max_line_time),
        ("max_analysis_time", max_analysis_time)))
    static = _static_files()
    tablebase = Tablebase(directory)
    worker = Worker(directory)
    limiters: dict[str, anyio.CapacityLimiter] = {}

    app = _new_app(_lifespan(tablebase, worker, limiters, start_worker), static)
    app.state.tablebase = tablebase
    app.state.worker = worker

    async def fast(function, *args):
        return await anyio.to_thread.run_sync(function, *args, limiter=limiters["fast"])

    async def slow(job, args, timeout):
        limiter = limiters["slow"]
        if limiter.statistics().tasks_waiting >= MAX_WAITING_JOBS:
            raise ServiceError("the server is busy with other searches; try again in a moment")
        return await anyio.to_thread.run_sync(worker.call, job, args, timeout, limiter=limiter)

    @app.get("/api/info", summary="What this server holds and its limits")
    async def info():
        """The version, the layers built, the layers the search process found damaged and searches
        without (`left_out_of_search`: probes of them get a 500; known once it has read its tables,
        which a first call waits for), the limits of the slow endpoints and the repetition rules
        (`rules`: each one's words, as every face says them)."""
        left_out = await anyio.to_thread.run_sync(worker.left_out_of_search)
        return {
            "version": __version__,
            "layers": tablebase.layers(),
            "left_out_of_search": {str(n): reason for n, reason in sorted(left_out.items())},
            "max_search_time": max_search_time,
            "max_line_time": max_line_time,
            "max_analysis_time": max_analysis_time,
            "max_line_plies": MAX_LINE_PLIES,
            "cycles": list(CYCLES),
            "rules": [rule.as_dict() for rule in Rule],  # the page words every rule as these say
        }

    @app.post("/api/position", summary="Value, predicted score and every move's value from the tables")
    async def position(request: GameRequest):
        """The game's current position: houses, side to move, captured seeds,
        legal moves and whether the game is over (with the final score; the
        true repetition rule applies over `moves`). Where the tables hold the
        position (`tables` true): its value for the side to move, the final
        score perfect play predicts, and each legal move's value, predicted
        score, outcome for the mover (win/draw/loss), best flag, and whether it
        would repeat a position of the game. Where they do not (`tables`
        false), ask /api/search."""

        def answer():
            return position_report(tablebase, _game_of(request))

        return await fast(answer)

    @app.post("/api/line", summary="The perfect-play line from the game's position")
    async def line(request: LineRequest):
        """Both sides play best moves from the tables (the winner toward
        converting), until the game ends by the rules or a position repeats
        (the true rule), or after max_plies. Needs the position's table."""
        game = await fast(_game_of, request)
        _refuse_finished(game)
        if not tablebase.has_layer(game.position.seeds):
            raise MissingTableError(f"no table for {game.position.seeds} seeds in this server's folder: "
                                    "a perfect line needs one (ask /api/search)")
        return await slow("line", {"position": str(game.position), "moves": "", "max_plies": request.max_plies},
                          max_line_time)

    @app.post("/api/search", summary="Search above the tables, with its exact flag")
    async def search(request: SearchRequest):
        """Alpha-beta search of the game's position (the game's earlier
        positions count for repetitions with cycles=own): the best move, its
        value for the side to move, `exact` when proven (else the estimate of
        the deepest finished depth), the principal line and, with move_values,
        every legal move's value and whether it is exact, from the same search
        (the position's value is then its best move's, and `move` one of the
        moves marked best). `time` is capped at the server's max_search_time
        and the time used is returned."""
        game = await fast(_game_of, request)
        _refuse_finished(game)
        seconds = min(request.time, max_search_time)
        args = {"position": request.position, "moves": request.moves, "time": seconds, "cycles": request.cycles,
                "move_values": request.move_values}
        return await slow("search", args, 2 * seconds + JOB_GRACE)

    @app.post("/api/engine", summary="The move awele plays: perfect play from the tables, else search")
    async def engine(request: EngineRequest):
        """The move awele plays in the game's position, with the true
        repetition rule over the game, within `time` seconds (capped), as
        `awele play` and the UCI engine choose it (solver.engine.Engine.move):
        from the tables when they hold the position and their value holds
        under that rule (`source` "table", `exact` true), else by a search
        with the game's history (`source` "search" or "component"; `search`
        holds the same record), which inside the tables has their values as
        its estimates at the horizon. `value`, `exact`, `rule`, `line`,
        `depth`, `nodes` and `seconds` describe how it was found. A damaged
        layer the position needs is searched without (`note` says which).

        The move may be an immediate win that ends the game at 25 seeds
        where the tables' best move wins by more: both win, and the true
        rule ends the game as soon as a side has 25 (the tables' values
        count every seed to the end, ignoring that stop), so this is not a
        wrong move."""
        game = await fast(_game_of, request)
        _refuse_finished(game)
        seconds = min(request.time, max_search_time)
        found = await slow("engine", {"position": request.position, "moves": request.moves, "time": seconds},
                           seconds + JOB_GRACE)
        return {**found, "search": None if found["source"] == "table" else found}

    @app.post("/api/analyse", summary="Every ply of a game against perfect play")
    async def analyse(request: AnalyseRequest):
        """solver.analysis.analyse on the record (played from `position`, the
        opening when left out): per ply the value before the move and of the
        move played, the best moves, the seeds given away and a mark; a summary
        per side. Plies above the tables are searched with `time_per_ply`
        seconds each, capped at max_search_time and so that the whole analysis
        searches at most max_analysis_time."""

        def check():
            game = Game.parse(request.record, request.position)
            return len(game.moves), game

        from ..analysis import MIN_TIME_PER_PLY

        plies, _ = await fast(check)  # check() parses the game: a bad one raises
        if plies == 0:
            raise InvalidArgumentError("the record holds no moves: write them as '1. F b 2. D a'")
        per_ply = max(MIN_TIME_PER_PLY, min(request.time_per_ply, max_search_time, max_analysis_time / plies))
        args = {"record": request.record, "position": request.position, "time_per_ply": per_ply}
        data = await slow("analyse", args, 2 * per_ply * plies + JOB_GRACE)
        data["time_per_ply"] = per_ply
        return data

    return app
