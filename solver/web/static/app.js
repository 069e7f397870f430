// The oracle's page. Every rule is the server's: the page sends the start
// position and the moves played, and draws what /api/position answers.
"use strict";

const NORTH_ORDER = "fedcba"; // North's houses as drawn, left to right
const SOUTH_ORDER = "ABCDEF";

const state = {
  start: null,        // start position text, null for the opening
  played: [],         // move letters from the start
  redo: [],           // moves taken back, most recent last
  engine: "none",     // the side awele plays: "none", "S" or "N"
  time: 1,            // seconds for searches above the tables
  maxTime: Infinity,  // the server's cap on them
  data: null,         // the last /api/position answer
  generation: 0,      // bumped at every position change: late answers are dropped
  rules: [],          // the repetition rules in the server's words (/api/info)
};

const $ = (id) => document.getElementById(id);

// API ---------------------------------------------------------------------------

class ApiError extends Error {}

async function api(path, body) {
  let response;
  try {
    response = await fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError("the server cannot be reached");
  }
  let data;
  try {
    data = await response.json();
  } catch (error) {
    throw new ApiError(`the server answered ${response.status} without JSON`);
  }
  if (!response.ok) throw new ApiError(data.error || `error ${response.status}`);
  return data;
}

function gameBody(extra) {
  return Object.assign({ position: state.start, moves: state.played.join(" ") }, extra || {});
}

// Messages ----------------------------------------------------------------------

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

function setStatus(message) {
  $("status").textContent = message;
}

function signed(value) {
  if (value === null || value === undefined) return "?";
  return value > 0 ? `+${value}` : `${value}`;
}

function score(result) {
  if (!result) return "";
  const [south, north] = result;
  const verdict = south > north ? "South wins" : north > south ? "North wins" : "draw";
  return `South ${south} \u2013 North ${north} (${verdict})`;
}

function sideName(side) {
  return side === "S" ? "South" : "North";
}

// A repetition rule in the server's words, found by its name ("true", "split") or by
// the `cycles` word a request and an answer use for it ("own", "split").
function ruleOf(word) {
  return state.rules.find((rule) => rule.rule === word || rule.cycles === word);
}

function ruleText(word) {
  const rule = ruleOf(word);
  return rule ? rule.text : `the repetition rule "${word}"`;
}

// Whether `word` names the game's own rule (every answer's default).
function isGameRule(word) {
  const rule = ruleOf(word);
  return rule !== undefined && rule.default;
}

// Drawing -----------------------------------------------------------------------

function buildBoard() {
  for (const [rowId, labelsId, order] of [["row-N", "labels-N", NORTH_ORDER], ["row-S", "labels-S", SOUTH_ORDER]]) {
    for (const letter of order) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "house";
      button.dataset.house = letter;
      button.id = `house-${letter}`;
      const seeds = document.createElement("span");
      seeds.className = "seeds";
      const value = document.createElement("span");
      value.className = "mv";
      const distance = document.createElement("span");
      distance.className = "dist";
      button.append(seeds, value, distance);
      button.addEventListener("click", () => clickHouse(letter));
      $(rowId).append(button);
      const label = document.createElement("span");
      label.textContent = letter;
      $(labelsId).append(label);
    }
  }
  for (const [rowId, order] of [["edit-N", NORTH_ORDER], ["edit-S", SOUTH_ORDER]]) {
    for (const letter of order) {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "number";
      input.min = "0";
      input.max = "48";
      input.value = "4";
      input.id = `edit-${letter}`;
      label.append(letter, input);
      $(rowId).append(label);
    }
  }
}

function houseIndex(letter) {
  return SOUTH_ORDER.includes(letter) ? SOUTH_ORDER.indexOf(letter) : 6 + "abcdef".indexOf(letter);
}

function drawPosition(data) {
  const board = $("board");
  board.dataset.position = data.position;
  board.dataset.toMove = data.to_move;
  board.dataset.tables = String(data.tables);
  for (const letter of SOUTH_ORDER + "abcdef") {
    const button = $(`house-${letter}`);
    button.querySelector(".seeds").textContent = data.houses[houseIndex(letter)];
    const legal = data.legal_moves.includes(letter);
    button.classList.toggle("legal", legal);
    button.classList.remove("best");
    button.disabled = !legal;
    const mark = button.querySelector(".mv");
    mark.textContent = "";
    mark.className = "mv";
    button.querySelector(".dist").textContent = "";
    delete button.dataset.value;
    button.title = legal ? `play ${letter}` : "";
  }
  $("captured-S").textContent = data.captured[0];
  $("captured-N").textContent = data.captured[1];
  $("store-S").classList.toggle("to-move", !data.over && data.to_move === "S");
  $("store-N").classList.toggle("to-move", !data.over && data.to_move === "N");
  $("to-move").textContent = data.over ? "nobody: the game is over" : sideName(data.to_move);
  $("record").textContent = data.record || "(none)";
  $("line").hidden = true;
  $("show-line").disabled = data.over || !data.tables;
  if (data.over) {
    $("value").textContent = "";
    $("predicted").textContent = `game over (${data.end}): ${score(data.result)}`;
    $("best").textContent = "";
    $("source").textContent = "";
    return;
  }
  if (data.tables) {
    drawMoveValues(data.moves, true);
    $("value").textContent = `${signed(data.value)} for ${sideName(data.to_move)}, of the ${data.seeds} seeds on the board`;
    $("predicted").textContent = score(data.predicted_result);
    $("best").textContent = data.best_moves.join(" ");
    $("source").textContent = `the tables: exact, under ${ruleText(data.rule)}`;
  } else {
    $("value").textContent = "";
    $("predicted").textContent = "";
    $("best").textContent = "";
    $("source").textContent = `no table for ${data.seeds} seeds: search`;
  }
}

function drawMoveValues(moves, exact) {
  for (const row of moves) {
    const button = $(`house-${row.move}`);
    const mark = button.querySelector(".mv");
    const estimate = exact || row.exact ? "" : "~";
    const repeats = row.repeats ? " \u21bb" : "";
    mark.textContent = `${signed(row.value)}${estimate}${row.best ? " \u2605" : ""}${repeats}`;
    mark.className = `mv ${row.outcome || ""}`;
    button.classList.toggle("best", row.best);
    button.dataset.value = String(row.value);
    let title = `${row.move}: ${signed(row.value)}${estimate ? " (estimate)" : ""}`;
    if (row.captured) title += `, captures ${row.captured}`;
    if (row.predicted_result) title += `; perfect play ends ${score(row.predicted_result)}`;
    if (row.repeats) title += `; repeats a position of this game, which ends it: ${score(row.repetition_result)}`;
    // The move's distance to conversion (tables only): plies to the next capture or end of the game, the side
    // ahead converting as fast as it can and the side behind holding out as long as it can.
    const distance = row.distance === null || row.distance === undefined ? "" : String(row.distance);
    button.querySelector(".dist").textContent = distance;
    if (distance) {
      const plies = `${distance} pl${row.distance === 1 ? "y" : "ies"}`;
      title += row.captured ? `; a capture: ${plies}` : `; next capture (or end) in ${plies}`;
    }
    button.title = title;
  }
}

function drawSearch(found) {
  // The rule the value holds under, in the server's words.
  const kind = (found.exact ? "exact" : `estimate at depth ${found.depth}`) + `, under ${ruleText(found.rule)}`;
  const value = found.value === null ? "?" : signed(found.value);
  $("value").textContent = `${value} for ${sideName(found.to_move)} (${kind})`;
  $("predicted").textContent = found.predicted_result ? score(found.predicted_result) + (found.exact ? "" : " (estimate)") : "";
  $("best").textContent = found.move + (found.line && found.line.length ? `   line: ${found.line.join(" ")}` : "");
  $("source").textContent = `search: ${found.nodes.toLocaleString()} nodes in ${found.seconds.toFixed(2)} s` +
    `, repetition: ${ruleText(found.cycles)}${isGameRule(found.cycles) ? " over this game" : ""}`;
  if (found.moves) drawMoveValues(found.moves, false);
}

function updateLinks() {
  const params = new URLSearchParams();
  if (state.start) params.set("position", state.start);
  if (state.played.length) params.set("moves", state.played.join(" "));
  if (state.engine !== "none") params.set("engine", state.engine);
  if (state.time !== 1) params.set("time", String(state.time));
  const query = params.toString();
  const url = query ? `/?${query}` : "/";
  history.replaceState(null, "", url);
  $("share").href = url;
  $("undo").disabled = state.played.length === 0;
  $("redo").disabled = state.redo.length === 0;
}

// Flow --------------------------------------------------------------------------

function setBusy(busy) {
  $("board").dataset.state = busy ? "busy" : "ready";
}

// Show the game (start, played) if the server accepts it; on an error keep
// the previous game and say why. Returns true when the new game is shown.
async function show(start, played, redo) {
  const generation = ++state.generation;
  setBusy(true);
  let data;
  try {
    data = await api("/api/position", { position: start, moves: played.join(" ") });
  } catch (error) {
    if (generation === state.generation) {
      showError(error.message);
      setBusy(false);
    }
    return false;
  }
  if (generation !== state.generation) return false;
  showError("");
  state.start = data.start === "4-4-4-4-4-4/4-4-4-4-4-4 S 0:0" ? null : data.start;
  state.played = data.played;
  state.redo = redo;
  state.data = data;
  drawPosition(data);
  copyBoardToEditor(); // the set-up panel starts from the position shown, not the opening
  updateLinks();
  setBusy(false);
  setStatus(data.over ? "game over" : "");
  afterShow(generation);
  return true;
}

function afterShow(generation) {
  const data = state.data;
  if (data.over) return;
  if (state.engine === data.to_move && state.redo.length === 0) {
    enginePlays(generation);
  } else if (!data.tables) {
    wantSearch(generation);
  }
}

async function enginePlays(generation) {
  setStatus("awele is thinking\u2026");
  $("board").dataset.engine = "thinking";
  let answer;
  try {
    answer = await api("/api/engine", gameBody({ time: state.time }));
  } catch (error) {
    if (generation === state.generation) {
      showError(error.message);
      setStatus("");
    }
    $("board").dataset.engine = "idle";
    return;
  }
  $("board").dataset.engine = "idle";
  if (generation !== state.generation) return;
  let note = `awele plays ${answer.move}`;
  if (answer.source !== "table") {
    const rule = isGameRule(answer.rule) ? "" : `, under ${ruleText(answer.rule)}`;
    note += ` (searched ${answer.nodes.toLocaleString()} nodes, value ${signed(answer.value)}${answer.exact ? " exact" : ` at depth ${answer.depth}`}${rule})`;
  } else {
    const rule = isGameRule(answer.rule) ? "" : ` under ${ruleText(answer.rule)}`;
    note += ` (perfect play from the tables, value ${signed(answer.value)}${rule})`;
  }
  if (answer.note) note += `; ${answer.note}`;
  await show(state.start, state.played.concat([answer.move]), []);
  setStatus(note);
}

// One search at a time from this page: a search asked for while one runs
// waits, and only the latest position's is run.
let searchRunning = false;
let searchWanted = null;

function wantSearch(generation) {
  searchWanted = generation;
  if (!searchRunning) runSearches();
}

async function runSearches() {
  searchRunning = true;
  while (searchWanted !== null) {
    const generation = searchWanted;
    searchWanted = null;
    if (generation !== state.generation) continue;
    setStatus(`searching for ${Math.min(state.time, state.maxTime)} s\u2026`);
    $("source").textContent = "searching\u2026";
    $("board").dataset.search = "running";
    try {
      const found = await api("/api/search", gameBody({ time: state.time, move_values: true }));
      if (generation === state.generation) {
        drawSearch(found);
        setStatus("");
      }
    } catch (error) {
      if (generation === state.generation) {
        showError(error.message);
        setStatus("");
      }
    }
    $("board").dataset.search = "done";
  }
  searchRunning = false;
}

function clickHouse(letter) {
  const data = state.data;
  if (!data || data.over || !data.legal_moves.includes(letter)) return;
  if (state.engine === data.to_move) return; // awele's turn
  const redo = state.redo.length && state.redo[state.redo.length - 1] === letter ? state.redo.slice(0, -1) : [];
  show(state.start, state.played.concat([letter]), redo);
}

function sideAfter(plies) {
  const start = (state.data && state.data.start) || "4-4-4-4-4-4/4-4-4-4-4-4 S 0:0";
  const first = start.split(/\s+/)[1] || "S";
  return plies % 2 === 0 ? first : first === "S" ? "N" : "S";
}

function undo() {
  if (!state.played.length) return;
  let keep = state.played.length - 1;
  // Against awele, take back to the player's own turn.
  if (state.engine !== "none" && keep > 0 && sideAfter(keep) === state.engine) keep -= 1;
  const taken = state.played.slice(keep).reverse();
  show(state.start, state.played.slice(0, keep), state.redo.concat(taken));
}

function redo() {
  if (!state.redo.length) return;
  const move = state.redo[state.redo.length - 1];
  show(state.start, state.played.concat([move]), state.redo.slice(0, -1));
}

async function showLine() {
  const generation = state.generation;
  setStatus("computing the perfect line\u2026");
  try {
    const line = await api("/api/line", gameBody({ max_plies: 200 }));
    if (generation !== state.generation) return;
    const box = $("line");
    const parts = line.moves.map((move, i) => (line.captures[i] ? `${move}(x${line.captures[i]})` : move));
    box.textContent = `${parts.join(" ")}  \u2014 ends: ${line.end}${line.result ? `, ${score(line.result)}` : ""}`;
    box.hidden = false;
    setStatus("");
  } catch (error) {
    if (generation === state.generation) {
      showError(error.message);
      setStatus("");
    }
  }
}

// Set up ------------------------------------------------------------------------

function looksLikePosition(text) {
  return text.includes("/") || /^\s*\d+([\s,]+\d+){11}\s*$/.test(text);
}

function pasted(event) {
  event.preventDefault();
  const text = $("paste").value.trim();
  if (!text) return;
  if (looksLikePosition(text)) show(text, [], []);
  else show(null, [text], []); // a record from the opening: the server reads it
}

function editedPosition() {
  const count = (letter) => $(`edit-${letter}`).value.trim() || "0";
  const south = [...SOUTH_ORDER].map(count).join("-");
  const north = [..."abcdef"].map(count).join("-");
  const captured = `${$("edit-captured-S").value.trim() || "0"}:${$("edit-captured-N").value.trim() || "0"}`;
  return `${south}/${north} ${$("edit-side").value} ${captured}`;
}

function copyBoardToEditor() {
  const data = state.data;
  if (!data) return;
  for (const letter of SOUTH_ORDER + "abcdef") $(`edit-${letter}`).value = data.houses[houseIndex(letter)];
  $("edit-side").value = data.to_move;
  $("edit-captured-S").value = data.captured[0];
  $("edit-captured-N").value = data.captured[1];
}

// Analysis ----------------------------------------------------------------------

async function analyseGame(event) {
  event.preventDefault();
  if (!state.played.length) {
    showError("play or load some moves first: the analysis judges every move of the game");
    return;
  }
  const seconds = Number($("analyse-time").value) || 1;
  const start = state.start;
  const played = state.played.slice();
  const box = $("analysis-result");
  box.textContent = "analysing\u2026";
  box.dataset.state = "running";
  let report;
  try {
    report = await api("/api/analyse", { record: played.join(" "), position: start, time_per_ply: seconds });
  } catch (error) {
    box.textContent = "";
    box.dataset.state = "error";
    showError(error.message);
    return;
  }
  box.textContent = "";
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const title of ["ply", "move", "before", "played", "best", "given"]) {
    const cell = document.createElement("th");
    cell.textContent = title;
    head.append(cell);
  }
  const body = table.createTBody();
  for (const ply of report.plies) {
    const row = body.insertRow();
    const approx = ply.exact ? "" : "~";
    const cells = [ply.ply, ply.notation, signed(ply.value_before) + approx, signed(ply.value_after) + approx,
      `${ply.best_moves.join(" ")} ${signed(ply.best_value)}`, ply.given_away ? `${ply.given_away}${approx}` : ""];
    for (const text of cells) row.insertCell().textContent = String(text);
    if (ply.mark) row.cells[1].className = ply.mark;
    row.title = `${ply.position}: ${ply.source === "table" ? "from the tables" : "searched"}` +
      `, ${isGameRule(ply.cycles) ? "every value" : "some values"} under ${ruleText(ply.cycles)}`;
    row.addEventListener("click", () => show(start, played.slice(0, ply.ply - 1), played.slice(ply.ply - 1).reverse()));
  }
  box.append(table);
  const summary = document.createElement("p");
  summary.textContent = ["South", "North"].map((side) => {
    const s = report.summary[side];
    return `${side}: ${s.moves} moves, ${s.best_moves} best, gave away ${s.given_away}` +
      ` (${s.inaccuracies} ?!, ${s.mistakes} ?, ${s.blunders} ??)${s.exact ? "" : ", some estimates"}`;
  }).join("; ");
  box.append(summary);
  const other = report.plies.find((ply) => !isGameRule(ply.cycles));
  if (other) {
    const aside = document.createElement("p");
    aside.textContent = `Some values follow ${ruleText(other.cycles)}, not the game's own repetition ` +
      "rule: hover a row to see which plies.";
    box.append(aside);
  }
  box.dataset.state = "done";
}

// Start -------------------------------------------------------------------------

function readUrl() {
  const params = new URLSearchParams(location.search);
  const moves = (params.get("moves") || "").trim();
  const engine = params.get("engine");
  const time = Number(params.get("time"));
  if (engine === "S" || engine === "N") state.engine = engine;
  if (time > 0) state.time = time;
  $("engine").value = state.engine;
  $("time").value = String(state.time);
  return { start: params.get("position"), played: moves ? moves.split(/\s+/) : [] };
}

async function init() {
  buildBoard();
  $("undo").addEventListener("click", undo);
  $("redo").addEventListener("click", redo);
  $("restart").addEventListener("click", () => show(state.start, [], state.redo.concat(state.played.slice().reverse())));
  $("show-line").addEventListener("click", showLine);
  $("engine").addEventListener("change", () => {
    state.engine = $("engine").value;
    updateLinks();
    if (state.data) afterShow(++state.generation);
  });
  $("time").addEventListener("change", () => {
    const seconds = Number($("time").value);
    if (seconds > 0) state.time = seconds;
    updateLinks();
  });
  $("paste-form").addEventListener("submit", pasted);
  $("edit-form").addEventListener("submit", (event) => {
    event.preventDefault();
    show(editedPosition(), [], []);
  });
  $("edit-copy").addEventListener("click", copyBoardToEditor);
  $("edit-opening").addEventListener("click", () => show(null, [], []));
  $("analyse-form").addEventListener("submit", analyseGame);
  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, select, textarea")) return;
    if (event.key === "ArrowLeft") undo();
    if (event.key === "ArrowRight") redo();
  });
  try {
    const info = await api("/api/info");
    const layers = info.layers;
    setStatus(layers.length ? `tables: ${layers.length} layers, up to ${Math.max(...layers)} seeds` : "no tables: search only");
    state.maxTime = info.max_search_time;
    state.rules = info.rules || [];
    $("time").max = String(info.max_search_time);
  } catch (error) {
    showError(error.message);
  }
  const wanted = readUrl();
  if (!(await show(wanted.start, wanted.played, [])) && (wanted.start !== null || wanted.played.length)) {
    const why = $("error").textContent;
    if (await show(null, [], [])) showError(`${why} (the link's game cannot be shown; here is the opening)`);
  }
}

init();
