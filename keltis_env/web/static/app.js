/* The page of keltis serve: set up a game, play it (several seats: hot-seat with a hand-over
   screen), watch agents, replay a record, ask for an analysis. Everything it shows comes from
   the JSON API (docs/serve.md); while a person plays it only ever asks for that person's seats. */
"use strict";

const S = {info: null, data: null, shownSeat: null, card: null, dice: new Set(), timer: null, paused: false};
const $ = (id) => document.getElementById(id);

function showError(text) {
  const box = $("error");
  box.textContent = text;
  box.hidden = !text;
}

function showSaved(text) {
  const box = $("saved");
  box.textContent = text;
  box.hidden = !text;
}

async function api(method, path, body, raw) {
  const init = {method, headers: {}};
  if (body !== undefined) {
    init.body = raw ? body : JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (e) { data = {error: `${response.status} ${response.statusText}`}; }
  if (!response.ok) {
    const text = (data && data.error) || `${response.status} ${response.statusText}`;
    showError(text);
    throw new Error(text);
  }
  showError("");
  return data;
}

/* ------------------------------------------------------------------ set-up */
function gameInfo() { return S.info.games.find((g) => g.name === $("game").value); }

function fillPlayers() {
  const g = gameInfo();
  const sel = $("players");
  const keep = sel.value;
  sel.innerHTML = "";
  for (let n = g.min_players; n <= g.max_players; n++) sel.append(new Option(String(n), String(n)));
  if (keep && Number(keep) >= g.min_players && Number(keep) <= g.max_players) sel.value = keep;
  fillSeats();
}

function fillSeats(agentsOnly) {
  const g = gameInfo();
  const n = $("players").value;
  const box = $("seats");
  box.innerHTML = "";
  for (let p = 0; p < Number(n); p++) {
    const sel = document.createElement("select");
    sel.id = `seat-${p}`;
    sel.append(new Option("you (a person)", S.info.human));
    for (const name of g.agents[n]) sel.append(new Option(name, name));
    sel.value = p === 0 && !agentsOnly ? S.info.human : g.default_agent[n];
    const label = document.createElement("label");
    label.append(`Player ${p} `, sel);
    box.append(label);
  }
}

async function start() {
  const n = Number($("players").value);
  const seats = [...Array(n).keys()].map((p) => $(`seat-${p}`).value);
  const body = {game: $("game").value, players: n, seats};
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  const data = await api("POST", "/api/games", body);
  begin(data);
}

function begin(data) {
  stopTimer();
  S.data = null; S.shownSeat = null; S.card = null; S.dice = new Set(); S.paused = false;
  $("setup").hidden = true; $("replay-setup").hidden = true; $("game-area").hidden = false;
  $("watch-controls").hidden = data.kind !== "watch";
  $("replay-controls").hidden = data.kind !== "replay";
  $("move-form").hidden = data.kind !== "play";
  $("pause").textContent = "Pause";
  $("analysis").innerHTML = "";
  showSaved("");
  if (data.kind === "play" && data.humans.length > 1 && !data.waiting) { handover(data); return; }
  show(data);
  next();
}

/* ------------------------------------------------------------------ the flow of a game */
function next() {
  const d = S.data;
  if (!d || d.over) { stopTimer(); return; }
  if (d.kind === "play" && d.waiting) setTimeout(() => agentsMove().catch(() => {}), 0);
  if (d.kind === "watch" && !S.timer && !S.paused) S.timer = setTimeout(() => { S.timer = null; watchStep(); }, speed());
}

async function agentsMove() {
  const d = S.data;
  if (!d || d.over || !d.waiting) return;
  const data = await api("POST", `/api/games/${d.id}/advance`, {});
  arrive(data);
}

function arrive(data) {
  if (data.kind === "play" && data.humans.length > 1 && !data.over && !data.waiting && data.to_move !== S.shownSeat) {
    handover(data);
    return;
  }
  show(data);
  next();
}

function handover(data) {
  S.data = {...data, moves: []};  // nothing to choose until the next person is there
  for (const id of ["board", "hands", "moves", "turn-help", "analysis"]) $(id).innerHTML = "";
  $("handover-text").textContent = `Player ${data.to_move}'s turn. Pass the device to player ${data.to_move}, then click.`;
  $("handover").hidden = false;
}

async function handoverReady() {
  const seat = S.data.to_move;
  $("handover").hidden = true;
  const data = await api("GET", `/api/games/${S.data.id}?seat=${seat}`);
  S.shownSeat = seat;
  show(data);
  next();
}

async function act(action) {
  const d = S.data;
  const data = await api("POST", `/api/games/${d.id}/act`, {action, seat: d.to_move});
  S.card = null; S.dice = new Set();
  $("analysis").innerHTML = "";
  show(data);
  arrive(data);
}

function speed() { return Number($("speed").value); }
function stopTimer() { if (S.timer) clearTimeout(S.timer); S.timer = null; }

async function watchStep() {
  const d = S.data;
  if (!d || d.over) return;
  try {
    show(await api("POST", `/api/games/${d.id}/advance`, {steps: 1}));
  } catch (e) { /* shown in the error line; the timer goes on */ }
  next();
}

/* ------------------------------------------------------------------ drawing */
function show(data) {
  S.data = data;
  if (data.kind === "play" && typeof data.viewer === "number") S.shownSeat = data.viewer;
  const v = data.view;
  const who = (p) => (data.humans.includes(p) ? `you (player ${p})` : `player ${p} (${data.names[p]})`);
  let status = `${data.game} · turn ${data.turn} · `;
  if (data.over) status += `game over${data.end ? ` (${data.end})` : ""} · scores ${data.scores.join(" / ")}`;
  else status += `${who(data.to_move)} to move · ${data.phase} step`;
  if (data.kind === "replay") status += ` · position ${data.step} of ${data.steps}`;
  $("status").textContent = status;
  $("message").textContent = data.message || "";
  $("message").hidden = !data.message;
  const board = $("board");
  board.innerHTML = "";
  const pick = diceChoice(data);
  board.append(KB.draw(v, pick));
  board.append(KB.players(v, data.names, data.to_move, data.humans));
  drawHands(data);
  drawMoves(data, pick);
  if (data.moves.length) $("move-text").placeholder = `or type a move, e.g. ${data.moves[data.moves.length - 1].text}`;
  drawLog(data);
  drawViewer(data);
  if (data.kind === "replay") {
    $("scrub").max = String(data.steps);
    $("scrub").value = String(data.step);
    $("replay-step").textContent = data.next ? `next move: player ${data.to_move}: ${data.next}` : "the end";
  }
}

function drawHands(data) {
  const box = $("hands");
  box.innerHTML = "";
  const v = data.view;
  if (v.hands) {
    v.hands.forEach((cards, p) => box.append(KB.hand(cards, p, `Player ${p}'s hand`)));
  } else if (v.hand) {
    const mine = data.kind === "play" && data.moves.length && data.phase === "play";
    const choose = mine ? (kind) => { S.card = S.card === kind ? null : kind; drawMoves(data); drawHands(data); } : null;
    box.append(KB.hand(v.hand, v.player, data.kind === "play" ? `Your hand (player ${v.player})` :
      `Player ${v.player}'s hand`, choose, S.card));
  }
}

function diceChoice(data) {
  if (data.kind !== "play" || !data.moves.length || data.phase !== "reroll") return null;
  return {chosen: S.dice, toggle: (die) => {
    if (S.dice.has(die)) S.dice.delete(die); else S.dice.add(die);
    show(data);
  }};
}

const HELP = {
  play: "Step 1 of your turn: play a card onto its path, or discard it. Click a card of your hand to see its moves.",
  draw: "Step 2 of your turn: draw a card, from the draw pile or the top of a discard pile.",
  bonus: "Bonus step (optional): take the bonus, or pass.",
  clover: "Clover bonus: choose the marker it moves (it is not optional).",
  reroll: "Keep the roll, or click the dice to re-roll (once) and re-roll them.",
  move: "Move a marker in a colour the dice show.",
};

function moveButton(move, label) {
  const b = KB.html("button", "move", label || move.text);
  b.type = "button";
  b.dataset.action = String(move.id);
  b.title = move.text;
  b.addEventListener("click", () => act(move.id).catch(() => {}));
  return b;
}

function drawMoves(data, pick) {
  const box = $("moves");
  box.innerHTML = "";
  const phase = data.phase === "bonus" && !data.moves.some((m) => m.text === "pass") ? "clover" : data.phase;
  $("turn-help").textContent = data.moves.length ? (HELP[phase] || "Your move.") : "";
  if (!data.moves.length) return;
  if (pick) { drawDiceMoves(box, data); return; }
  const groups = new Map();
  for (const m of data.moves) {
    const hit = /^(play|discard) (\w+ \d+)( large)?$/.exec(m.text);
    const key = hit ? hit[2] : "";
    if (hit && S.card !== null && KB.cardName(S.card) !== key) continue;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push([m, hit ? `${hit[1]}${hit[3] || ""}` : m.text === "pass" ? "pass (no bonus)" : m.text]);
  }
  for (const [key, items] of groups) {
    const row = KB.html("div", "move-group");
    if (key) row.append(KB.html("span", "move-card", key));
    for (const [m, label] of items) row.append(moveButton(m, label));
    box.append(row);
  }
}

function drawDiceMoves(box, data) {
  const chosen = [...S.dice].sort();
  const text = chosen.length ? `reroll ${chosen.join(",")}` : "keep";
  const move = data.moves.find((m) => m.text === text);
  const row = KB.html("div", "move-group");
  const keep = data.moves.find((m) => m.text === "keep");
  if (keep) row.append(moveButton(keep, "keep the roll"));
  if (move && chosen.length) row.append(moveButton(move, `re-roll dice ${chosen.join(", ")}`));
  box.append(row);
}

function drawLog(data) {
  const log = $("log");
  log.innerHTML = "";
  for (const entry of data.log.slice(-60)) {
    const li = KB.html("li", "", `player ${entry.seat}: ${entry.text}`);
    li.value = entry.step;
    log.append(li);
  }
  log.scrollTop = log.scrollHeight;
}

function drawViewer(data) {
  const sel = $("viewer");
  sel.innerHTML = "";
  const open = data.kind !== "play" || data.over;
  if (open) sel.append(new Option("full state", "full"));
  for (let p = 0; p < data.players; p++) {
    if (open || p === data.viewer) sel.append(new Option(`player ${p}'s view`, String(p)));
  }
  sel.value = String(data.viewer);
  sel.disabled = !open;
}

/* ------------------------------------------------------------------ controls */
async function changeViewer() {
  const d = S.data;
  const step = d.kind === "replay" ? `&step=${d.step}` : "";
  show(await api("GET", `/api/games/${d.id}?seat=${$("viewer").value}${step}`));
}

async function replayTo(step) {
  const d = S.data;
  const target = Math.max(0, Math.min(d.steps, step));
  show(await api("GET", `/api/games/${d.id}?seat=${d.viewer}&step=${target}`));
}

async function analyse() {
  const d = S.data;
  const step = d.kind === "replay" ? `?step=${d.step}` : "";
  const a = await api("GET", `/api/games/${d.id}/analysis${step}`);
  const box = $("analysis");
  box.innerHTML = "";
  box.append(KB.html("h3", "", `Analysis for player ${a.seat}`));
  for (const [key, title] of [["policy", "Policy"], ["search", "Search"]]) {
    const part = a[key];
    if (!part) continue;
    const sec = KB.html("div", `analysis-${key}`);
    if (part.error) { sec.append(KB.html("p", "", `${title}: ${part.error}`)); box.append(sec); continue; }
    let head = `${title} (${part.agent})`;
    if (key === "policy" && part.value !== null) head += ` · value ${part.value.toFixed(3)} (${part.value_target})`;
    if (key === "search") head += " · points of final score difference";
    sec.append(KB.html("p", "analysis-head", head));
    const table = KB.html("table", "");
    for (const m of part.moves.slice(0, 12)) {
      const tr = KB.html("tr", "");
      const num = key === "policy" ? `${(100 * m.probability).toFixed(1)}%` : m.value.toFixed(2);
      const bar = KB.html("span", "bar");
      bar.style.width = key === "policy" ? `${Math.round(100 * m.probability)}px` : "0";
      tr.append(KB.html("td", "", m.text), KB.html("td", "num", num));
      const td = KB.html("td", ""); td.append(bar); tr.append(td);
      table.append(tr);
    }
    sec.append(table);
    box.append(sec);
  }
}

/* The record of an unfinished game names its deal (every hidden card), so while a person plays
   it is saved on the server, which answers only the file's name; otherwise it is downloaded. */
async function save() {
  const d = S.data;
  if (d.kind === "play" && !d.over) {
    const saved = await api("POST", `/api/games/${d.id}/save`);
    showSaved(`Saved on the server as ${saved.saved}, in its save folder (keltis serve --save-dir; ` +
              "printed when it started). Saving again replaces it.");
    return;
  }
  const record = await api("GET", `/api/games/${d.id}/record`);
  const blob = new Blob([JSON.stringify(record, null, 1)], {type: "application/json"});
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = `${d.game}-${d.id}.json`;
  document.body.append(a);
  a.click();
  a.remove();
}

async function closeGame() {
  stopTimer();
  const d = S.data;
  S.data = null;
  $("game-area").hidden = true;
  $("setup").hidden = false;
  if (d) await api("DELETE", `/api/games/${d.id}`).catch(() => {});
}

async function openRecord() {
  begin(await api("POST", "/api/replays", {record: $("record-select").value}));
}

async function upload() {
  const file = $("upload").files[0];
  if (!file) return;
  if (file.size > S.info.limits.upload_bytes) {
    showError(`the record is ${file.size} bytes; the limit is ${S.info.limits.upload_bytes}`);
    $("upload").value = "";
    return;
  }
  const text = await file.text();
  $("upload").value = "";
  begin(await api("POST", "/api/replays/upload", text, true));
}

function tab(replay) {
  $("tab-new").classList.toggle("active", !replay);
  $("tab-replay").classList.toggle("active", replay);
  $("setup").hidden = replay || !$("game-area").hidden;
  $("replay-setup").hidden = !replay || !$("game-area").hidden;
}

async function init() {
  S.info = await api("GET", "/api/info");
  const games = S.info.games.map((g) => g.name);
  for (const name of games) $("game").append(new Option(name, name));
  $("game").value = games.includes("keltis") ? "keltis" : games[0];
  fillPlayers();
  const records = $("record-select");
  for (const name of S.info.records) records.append(new Option(name, name));
  if (!S.info.records.length) records.append(new Option("(none: start the server with --record PATH)", ""));
  const quiet = (f) => (...args) => f(...args).catch(() => {});
  $("game").addEventListener("change", fillPlayers);
  $("players").addEventListener("change", () => fillSeats());
  $("all-agents").addEventListener("click", () => fillSeats(true));
  $("start").addEventListener("click", quiet(start));
  $("handover-ready").addEventListener("click", quiet(handoverReady));
  $("move-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("move-text").value.trim();
    if (text) act(text).then(() => { $("move-text").value = ""; }).catch(() => {});
  });
  $("pause").addEventListener("click", () => {
    S.paused = !S.paused;
    $("pause").textContent = S.paused ? "Play" : "Pause";
    if (S.paused) stopTimer(); else next();
  });
  $("step").addEventListener("click", () => { S.paused = true; $("pause").textContent = "Play"; stopTimer(); watchStep(); });
  const speedText = () => { $("speed-text").textContent = `${(speed() / 1000).toFixed(2)} s a move`; };
  $("speed").addEventListener("input", speedText);
  speedText();
  $("first").addEventListener("click", quiet(() => replayTo(0)));
  $("back").addEventListener("click", quiet(() => replayTo(S.data.step - 1)));
  $("forward").addEventListener("click", quiet(() => replayTo(S.data.step + 1)));
  $("last").addEventListener("click", quiet(() => replayTo(S.data.steps)));
  $("scrub").addEventListener("change", quiet(() => replayTo(Number($("scrub").value))));
  $("viewer").addEventListener("change", quiet(changeViewer));
  $("analyse").addEventListener("click", quiet(analyse));
  $("save").addEventListener("click", quiet(save));
  $("close").addEventListener("click", quiet(closeGame));
  $("open-record").addEventListener("click", quiet(openRecord));
  $("upload").addEventListener("change", quiet(upload));
  $("tab-new").addEventListener("click", () => tab(false));
  $("tab-replay").addEventListener("click", () => tab(true));
}

window.addEventListener("DOMContentLoaded", () => { init().catch(() => {}); });
