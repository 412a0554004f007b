/* The page of keltis serve: set up a game, play it (several seats: hot-seat with a hand-over
   screen), watch agents, replay a record, ask for an analysis. Everything it shows comes from
   the JSON API (docs/serve.md); while a person plays it only ever asks for that person's seats.
   Each game and replay position has its address (/games/ID, ?step=K): a reload, Back or a
   second tab opens it again; the browser that opened a game holds its seats (a cookie). */
"use strict";

const S = {info: null, data: null, shownSeat: null, card: null, dice: new Set(), timer: null, paused: false,
  busy: false, steps: 0, stepping: false};
const $ = (id) => document.getElementById(id);
/* how long the page waits before asking again when the server cannot be reached (ms), and how often */
const RETRY_MS = [1000, 2000, 3000, 5000];
const RETRIES = 60;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
/* how often the page asks how far a whole-game search has come (ms) */
const SEARCH_POLL_MS = 1000;

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

/* An API request. A request the server never answered (it is stopped or restarting) is shown
   and asked again, RETRIES times; `once` (a new game, an upload) is not asked again, since the
   server may have made it. A refusal is shown in the error line and thrown, with its status. */
async function api(method, path, body, opts) {
  const {raw = false, once = false, text = false} = opts || {};
  const init = {method, headers: {}};
  if (body !== undefined) {
    init.body = raw ? body : JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let response = null;
  for (let attempt = 0; response === null; attempt++) {
    try {
      response = await fetch(path, init);
    } catch (e) {
      if (once || attempt >= RETRIES) {
        showError("The server cannot be reached: it is stopped, or restarting. Reload the page once it runs.");
        throw new Error("unreachable");
      }
      S.lost = true;
      const wait = RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)];
      showError(`The server cannot be reached (stopped, or restarting?); trying again in ${wait / 1000} s ...`);
      await sleep(wait);
    }
  }
  if (S.info && S.lost) await restartNotice();
  if (text && response.ok) { showError(""); return response.text(); }
  let data = null;
  try { data = await response.json(); } catch (e) { data = {error: `${response.status} ${response.statusText}`}; }
  if (!response.ok) {
    let message = (data && data.error) || `${response.status} ${response.statusText}`;
    if (response.status === 404 && path.startsWith("/api/games/") && await restarted()) {
      message = "The server was restarted, and this game was not kept (a server keeps its games in its " +
        "--save-dir folder; start it with the same folder to go on with them).";
    }
    showError(message);
    const error = new Error(message);
    error.status = response.status;
    throw error;
  }
  showError("");
  return data;
}

/* Whether the server that answers now is not the one the page started with (it restarted). */
async function restarted() {
  try {
    const info = await (await fetch("/api/info")).json();
    return Boolean(S.info && info.server && info.server !== S.info.server);
  } catch (e) { return false; }
}

async function restartNotice() {
  S.lost = false;
  if (await restarted()) {
    const info = await (await fetch("/api/info")).json();
    S.info.server = info.server;
    showSaved("The server was restarted; the game was kept and goes on.");
  }
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
    const rated = (S.info.ratings || {})[`${g.name}-${n}p`] || {};
    for (const name of g.agents[n]) {
      const r = rated[name];
      sel.append(new Option(r ? `${name} · rating ${r.rating} (${r.track} leaderboard)` : name, name));
    }
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
  const data = await api("POST", "/api/games", body, {once: true});
  begin(data);
}

/* The page's address follows what it shows: a game, or a replay's position. */
function address(data, replace) {
  const url = data ? data.url : "/";
  if (location.pathname + location.search === url) return;
  if (replace) history.replaceState(null, "", url); else history.pushState(null, "", url);
}

function begin(data, replace) {
  stopTimer();
  address(data, replace);
  S.data = null; S.shownSeat = null; S.card = null; S.dice = new Set(); S.paused = false; S.steps = 0;
  S.busy = false;
  S.yours = data.yours !== false;  // a game another browser opened is only looked at here
  $("setup").hidden = true; $("replay-setup").hidden = true; $("game-area").hidden = false;
  $("tab-new").classList.remove("active"); $("tab-replay").classList.remove("active");
  $("watch-controls").hidden = data.kind !== "watch" || !S.yours;
  $("replay-controls").hidden = data.kind !== "replay";
  $("move-form").hidden = data.kind !== "play";
  $("pause").textContent = "Pause";
  $("analysis").innerHTML = "";
  showSaved("");
  if (data.kind === "play" && data.humans.length > 1 && !data.waiting) { handover(data); return; }
  show(data);
  next();
  if (data.kind === "replay") loadSearch(data.id).catch(() => {});  // what was searched already is kept with it
}

/* ------------------------------------------------------------------ the flow of a game */
function next() {
  const d = S.data;
  if (!d || d.over) { stopTimer(); return; }
  if (d.kind === "play" && d.waiting) setTimeout(() => agentsMove().catch(() => {}), 0);
  if (d.kind === "watch" && !S.yours) {
    showSaved("Another browser runs this game; reload the page to see how far it has come.");
    return;
  }
  if (d.kind === "watch" && !S.timer && !S.paused) S.timer = setTimeout(() => { S.timer = null; watchStep(); }, speed());
}

async function agentsMove() {
  const d = S.data;
  if (!d || d.over || !d.waiting || S.busy) return;
  S.busy = true;
  thinking(d);
  let data = null;
  try {
    data = await api("POST", `/api/games/${d.id}/advance`, {});
  } catch (e) {
    if (e.status !== 409) throw e;
  } finally {
    S.busy = false;
    thinking(null);
  }
  if (data) arrive(data);
  else { await sleep(300); await refresh(); }  // another tab moved the agents, or they were busy: look again
}

/* A line that says which agent is deciding while the page waits for it. */
function thinking(d) {
  const box = $("thinking");
  box.hidden = !d;
  if (d) box.textContent = `player ${d.to_move} (${d.names[d.to_move]}) is thinking ...`;
}

/* The game as the server has it now (a stale tab, another tab's move). */
async function refresh() {
  const d = S.data;
  if (!d) return;
  const seat = d.kind === "play" && typeof d.viewer === "number" ? `?seat=${d.viewer}` : "";
  const data = await api("GET", `/api/games/${d.id}${seat}`);
  S.card = null; S.dice = new Set();
  show(data);
  next();
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

/* One move per click: the move carries the step it was chosen at, and every move button waits
   while it is on its way. A move the game has passed (another tab played, a second click) plays
   nothing; the page shows the game as it is. */
async function act(action) {
  const d = S.data;
  if (!d || S.busy) return;
  S.busy = true;
  for (const b of document.querySelectorAll("#moves button, #move-submit")) b.disabled = true;
  try {
    const data = await api("POST", `/api/games/${d.id}/act`, {action, seat: d.to_move, step: d.step});
    S.card = null; S.dice = new Set();
    $("analysis").innerHTML = "";
    S.busy = false;
    arrive(data);
  } catch (e) {
    S.busy = false;
    if (e.status === 409) { await refresh(); showSaved("The game had moved on (another tab?); here it is now."); }
    else for (const b of document.querySelectorAll("#moves button, #move-submit")) b.disabled = false;
    throw e;
  }
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

/* Step clicks queue: each is one move, made after the one before has come back. */
async function queueStep() {
  S.paused = true; $("pause").textContent = "Play"; stopTimer();
  S.steps += 1;
  if (S.stepping) return;
  S.stepping = true;
  try {
    while (S.steps > 0 && S.data && !S.data.over) {
      const d = S.data;
      try {
        show(await api("POST", `/api/games/${d.id}/advance`, {steps: 1}));
        S.steps -= 1;
      } catch (e) {
        if (e.status === 409 && /busy/.test(e.message)) { await sleep(200); continue; }
        S.steps = 0;
      }
    }
  } finally {
    S.steps = 0;
    S.stepping = false;
  }
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
  const result = $("result");
  result.innerHTML = "";
  result.hidden = !data.over || Boolean(data.message);  // a game an agent's failure ended has no winner to show
  if (!result.hidden) result.append(KB.result(v, data.names, data.humans));
  for (const part of document.querySelectorAll("#legend [data-game]")) part.hidden = part.dataset.game !== data.game;
  drawShare(data);
  const board = $("board");
  board.innerHTML = "";
  const pick = diceChoice(data);
  board.append(KB.draw(v, pick));
  board.append(KB.players(v, data.names, data.to_move, data.humans));
  drawHands(data);
  drawMoves(data, pick);
  $("move-submit").disabled = S.busy;
  if (data.moves.length) $("move-text").placeholder = `or type a move, e.g. ${data.moves[data.moves.length - 1].text}`;
  drawLog(data);
  drawViewer(data);
  drawReview(data);
  drawSearch(data);
  if (data.kind === "replay") {
    $("scrub").max = String(data.steps);
    $("scrub").value = String(data.step);
    $("replay-step").textContent = data.next ? `next move: player ${data.to_move}: ${data.next}` : "the end";
    $("play-from-here").hidden = !data.next;
    $("play-from-here").textContent = `Play from here (you: player ${data.to_move})`;
    address(data, true);
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
  b.disabled = S.busy;
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
  const review = data.kind === "replay" && S.review && S.review.id === data.id ? S.review.data : null;
  for (const entry of data.log.slice(-60)) {
    const li = KB.html("li", "", `player ${entry.seat}: ${entry.text}`);
    li.value = entry.step;
    const m = review ? review.moves[entry.step - 1] : null;
    if (m) {
      li.classList.add(m.agrees ? "agrees" : "differs");
      let note = m.agrees ? " \u2713 the policy's choice" :
        ` \u2717 the policy: ${m.choice} (${(100 * m.choice_probability).toFixed(0)}%; this ${(100 * m.probability).toFixed(0)}%)`;
      if (m.lost !== null && m.lost > 0.005) note += ` · lost ${m.lost.toFixed(3)}`;
      li.append(KB.html("span", "review-note", note));
    }
    const searched = searchMark(data, entry.step) || (m && m.search);
    if (searched) {
      li.classList.add(searched.agrees ? "search-agrees" : "search-differs");
      li.append(KB.html("span", "search-note", KB.searchNote(searched)));
    }
    log.append(li);
  }
  log.scrollTop = log.scrollHeight;
}

/* ------------------------------------------------------------------ the search of every move */
/* The search's mark of move `step` of the replay shown, where the whole-game search (or an analysis) searched it. */
function searchMark(data, step) {
  const job = data.kind === "replay" && S.search && S.search.id === data.id ? S.search.data : null;
  const m = job ? job.marks[step - 1] : null;
  return m ? m.search : null;
}

async function loadSearch(id) {
  const data = await api("GET", `/api/games/${id}/search`);
  arriveSearch(id, data);
}

/* A job's progress: the line under the replay's buttons, the marks in the moves list, and the
   next look while it runs. */
function arriveSearch(id, data) {
  if (!S.data || S.data.id !== id) return;  // the page shows another game now
  S.search = {id, data};
  drawSearch(S.data);
  drawLog(S.data);
  if (data.state === "running" && !S.searchTimer) {
    S.searchTimer = setTimeout(() => { S.searchTimer = null; loadSearch(id).catch(() => {}); }, SEARCH_POLL_MS);
  }
}

function drawSearch(data) {
  const job = S.search && S.search.id === data.id ? S.search.data : null;
  const box = $("search-progress");
  box.hidden = !job || (job.state === "idle" && !job.done && !job.message);
  $("search-game").hidden = !S.yours || (job && job.state !== "idle");
  $("search-cancel").hidden = !S.yours || !job || job.state !== "running";
  if (!job) return;
  let text = `The search (${job.agent}) at every move: ${job.done} of ${job.total} positions`;
  if (job.state === "running") text += " ...";
  else if (job.state === "done") text += ` · \u2713 marks the search's choice; \u2717 says what it prefers and what ` +
    "the move lost against it, in points of final score difference (the mover's minus the others')";
  if (job.message) text += ` · ${job.message}`;
  $("search-text").textContent = text;
}

async function searchGame() {
  const d = S.data;
  if (!d || d.kind !== "replay") return;
  arriveSearch(d.id, await api("POST", `/api/games/${d.id}/search`, {}));
}

async function cancelSearch() {
  const d = S.data;
  if (!d || d.kind !== "replay") return;
  arriveSearch(d.id, await api("DELETE", `/api/games/${d.id}/search`));
}

/* A replay's review: the policy's value of every position for every seat, as a graph, and
   each move marked against the policy's choice with the value it lost. */
async function reviewGame() {
  const d = S.data;
  if (!d || d.kind !== "replay") return;
  $("review").textContent = "The policy is reviewing the whole game ...";
  const data = await api("GET", `/api/games/${d.id}/review`);
  S.review = {id: d.id, data};
  drawReview(S.data);
  drawLog(S.data);
}

function drawReview(data) {
  const box = $("review");
  const r = S.review && S.review.id === data.id ? S.review.data : null;
  box.innerHTML = "";
  box.hidden = data.kind !== "replay";
  if (!r) return;
  const W = 320, H = 120, last = r.values.length - 1;
  const all = r.values.flat().filter((v) => v !== null);
  const lo = Math.min(-0.1, ...all), hi = Math.max(0.1, ...all);
  const x = (k) => (last ? (k / last) * (W - 10) + 5 : 5);
  const y = (v) => H - 5 - ((v - lo) / (hi - lo)) * (H - 10);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "value-graph");
  const line = (attrs) => { const e = document.createElementNS(svg.namespaceURI, "path"); for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v); svg.append(e); };
  line({d: `M5 ${y(0)} H${W - 5}`, stroke: "#786e5f", "stroke-dasharray": "3 3", fill: "none"});
  const colours = ["#26262a", "#b0a080", "#f08000", "#7a46be"];
  for (let p = 0; p < data.players; p++) {
    let path = "";
    r.values.forEach((row, k) => { if (row[p] !== null) path += `${path ? "L" : "M"}${x(k).toFixed(1)} ${y(row[p]).toFixed(1)}`; });
    line({d: path, stroke: colours[p], fill: "none", "stroke-width": "1.5", "data-seat": String(p)});
  }
  line({d: `M${x(data.step)} 0 V${H}`, stroke: "#d4a014", "stroke-width": "2"});
  box.append(KB.html("p", "analysis-head", `Value over the game (${r.agent})`), svg);
  const key = KB.html("p", "hint", data.names.map((n, p) => `player ${p}: ${["black", "tan", "orange", "purple"][p]}`).join(" · ") +
    `. The value is ${r.value_meaning}.`);
  const differs = r.moves.filter((m) => !m.agrees).length;
  box.append(key, KB.html("p", "hint", `${r.moves.length - differs} of ${r.moves.length} moves are the policy's choice; ` +
    "the moves list marks the others."));
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

/* Once a game is over (and in a replay): its link, its replay, and its replay as one HTML file. */
function drawShare(data) {
  const open = data.kind === "replay" || data.over;
  $("share").hidden = !open;
  if (!open) return;
  $("open-replay").hidden = data.kind === "replay";
  $("export").href = `/games/${data.id}/replay.html`;
  $("share-link").value = location.origin + data.url;
}

/* A new game from the replay's position: you at the seat to move, the default agent elsewhere;
   what your seat may not know there is dealt anew by the server. */
async function playFromHere() {
  const d = S.data;
  const g = S.info.games.find((x) => x.name === d.game);
  const seats = [...Array(d.players).keys()].map((p) => (p === d.to_move ? S.info.human :
    g.default_agent[String(d.players)]));
  begin(await api("POST", "/api/games", {seats, from: {replay: d.id, step: d.step}}, {once: true}));
}

async function openReplay() {
  begin(await api("POST", "/api/replays", {game: S.data.id}, {once: true}));
}

/* ------------------------------------------------------------------ controls */
async function changeViewer() {
  const d = S.data;
  const step = d.kind === "replay" ? `&step=${d.step}` : "";
  show(await api("GET", `/api/games/${d.id}?seat=${$("viewer").value}${step}`));
}

async function replayTo(step) {
  const d = S.data;
  if (!d || d.kind !== "replay") return;
  const target = Math.max(0, Math.min(d.steps, step));
  if (target === d.step) return;
  const data = await api("GET", `/api/games/${d.id}?seat=${d.viewer}&step=${target}`);
  $("analysis").innerHTML = "";  // the analysis was of the position left
  show(data);
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
    if (key === "policy" && part.value_meaning) sec.append(KB.html("p", "hint", `The value is ${part.value_meaning}.`));
    if (key === "search") sec.append(KB.html("p", "hint", `Every move the search considered (${part.rollouts} ` +
      "playouts), by the final score difference (the mover's minus the others') its playouts reached after it; " +
      "n: the sampled worlds it was played out in; a move the halving dropped is in grey; * the search's choice."));
    const played = d.kind === "replay" ? d.next : null;  // the move the record makes here
    const table = KB.html("table", "");
    for (const m of part.moves) {
      const tr = KB.html("tr", m.text === played ? "played" : "");
      const num = key === "policy" ? `${(100 * m.probability).toFixed(1)}%` :
        `${m.value.toFixed(2)}${m.samples !== undefined ? ` · n ${m.samples}` : ""}${m.chosen ? " *" : ""}`;
      if (key === "search" && m.kept === false) tr.classList.add("dropped");
      const bar = KB.html("span", "bar");
      bar.style.width = key === "policy" ? `${Math.round(100 * m.probability)}px` : "0";
      tr.append(KB.html("td", "", m.text === played ? `${m.text} \u2190 played` : m.text), KB.html("td", "num", num));
      const td = KB.html("td", ""); td.append(bar); tr.append(td);
      table.append(tr);
    }
    sec.append(table);
    box.append(sec);
  }
  if (d.kind === "replay" && S.review && S.review.id === d.id) await reviewGame();  // its marks gain this search
  if (d.kind === "replay") await loadSearch(d.id);
}

/* The record of an unfinished game names its deal (every hidden card), so while a person plays
   it is saved on the server, which answers only the file's name; otherwise it is downloaded. */
async function save() {
  const d = S.data;
  if (d.kind === "play" && !d.over) {
    const saved = await api("POST", `/api/games/${d.id}/save`, {});
    showSaved(`Saved on the server as ${saved.saved}, in its save folder (keltis serve --save-dir; ` +
              "printed when it started). Saving again replaces it.");
    return;
  }
  // the record's text as the server wrote it: a seed of 128 bits is more than a JavaScript number holds
  const record = await api("GET", `/api/games/${d.id}/record`, undefined, {text: true});
  const blob = new Blob([record], {type: "application/json"});
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = `${d.game}-${d.id}.json`;
  document.body.append(a);
  a.click();
  a.remove();
}

/* Leave the game shown for the set-up (the game stays at its address). */
function leave(replay) {
  stopTimer();
  S.data = null; S.steps = 0;
  thinking(null);
  $("handover").hidden = true;
  $("game-area").hidden = true;
  showSaved("");
  address(null);
  tab(replay);
}

async function closeGame() {
  const d = S.data;
  const mine = S.yours;
  leave(false);
  if (d && mine) await api("DELETE", `/api/games/${d.id}`).catch(() => {});  // another browser's game stays
}

async function openRecord() {
  begin(await api("POST", "/api/replays", {record: $("record-select").value}, {once: true}));
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
  begin(await api("POST", "/api/replays/upload", text, {raw: true, once: true}));
}

function tab(replay) {
  $("tab-new").classList.toggle("active", !replay);
  $("tab-replay").classList.toggle("active", replay);
  $("setup").hidden = replay;
  $("replay-setup").hidden = !replay;
}

/* The rules (docs/rules.md), one click away, as the text they are written in. */
async function showRules() {
  if (!$("rules-text").textContent) $("rules-text").textContent = (await api("GET", "/api/rules")).text;
  $("rules").hidden = false;
}

/* Open what the address names: a game (as the seat this browser holds), a replay's position, or the set-up. */
async function route() {
  const hit = /^\/games\/([A-Za-z0-9_-]+)$/.exec(location.pathname);
  if (!hit) { if (S.data) leave(false); return; }
  const step = new URLSearchParams(location.search).get("step");
  const data = await api("GET", `/api/games/${hit[1]}${step !== null ? `?step=${encodeURIComponent(step)}` : ""}`);
  begin(data, true);
}

/* Keys: in a replay the arrows step (Home, End: the ends); in a game, the digits 1-9 play the listed moves. */
function key(e) {
  const d = S.data;
  if (!d || e.target.closest("input, select, textarea") || e.altKey || e.ctrlKey || e.metaKey) return;
  if (d.kind === "replay") {
    const to = {ArrowLeft: d.step - 1, ArrowRight: d.step + 1, Home: 0, End: d.steps}[e.key];
    if (to !== undefined) { e.preventDefault(); replayTo(to).catch(() => {}); }
    return;
  }
  if (/^[1-9]$/.test(e.key)) {
    const buttons = [...document.querySelectorAll("#moves button.move")];
    const b = buttons[Number(e.key) - 1];
    if (b && !b.disabled) { e.preventDefault(); b.click(); }
  }
}

async function init() {
  S.info = await api("GET", "/api/info");
  S.lost = false;
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
  $("step").addEventListener("click", () => { queueStep().catch(() => {}); });
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
  $("review-game").addEventListener("click", quiet(reviewGame));
  $("search-game").addEventListener("click", quiet(searchGame));
  $("search-cancel").addEventListener("click", quiet(cancelSearch));
  $("play-from-here").addEventListener("click", quiet(playFromHere));
  $("save").addEventListener("click", quiet(save));
  $("close").addEventListener("click", quiet(closeGame));
  $("open-record").addEventListener("click", quiet(openRecord));
  $("upload").addEventListener("change", quiet(upload));
  $("rules-open").addEventListener("click", quiet(showRules));
  $("open-replay").addEventListener("click", quiet(openReplay));
  $("share-link").addEventListener("focus", () => $("share-link").select());
  $("rules-close").addEventListener("click", () => { $("rules").hidden = true; });
  $("tab-new").addEventListener("click", () => leave(false));
  $("tab-replay").addEventListener("click", () => leave(true));
  document.addEventListener("keydown", key);
  window.addEventListener("popstate", () => { route().catch(() => {}); });
  document.addEventListener("visibilitychange", () => {  // a tab shown again looks at the game again
    if (!document.hidden && S.data && S.data.kind !== "replay" && !S.busy && !S.stepping && $("handover").hidden) {
      refresh().catch(() => {});
    }
  });
  await route().catch(() => {});
}

window.addEventListener("DOMContentLoaded", () => { init().catch(() => {}); });
