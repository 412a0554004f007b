/* The viewer of a replay file (keltis serve's Export, keltis replay --html): one HTML file that
   holds the board's drawing (board.js), every position of a finished game as the full state,
   its moves, the analyses computed for it and the search's answers where the game was searched
   (each move marked against the search's choice), and opens offline, with no server. */
"use strict";

(() => {
  const R = JSON.parse(document.getElementById("replay-data").textContent);
  const $ = (id) => document.getElementById(id);
  const last = R.positions.length - 1;
  let step = last;

  function analysisBox(a) {
    const box = KB.html("div", "");
    box.append(KB.html("h3", "", `Analysis for player ${a.seat}`));
    for (const [key, title] of [["policy", "Policy"], ["search", "Search"]]) {
      const part = a[key];
      if (!part) continue;
      if (part.error) { box.append(KB.html("p", "", `${title}: ${part.error}`)); continue; }
      let head = `${title} (${part.agent})`;
      if (key === "policy" && part.value !== null) head += ` · value ${part.value.toFixed(3)} (${part.value_target})`;
      if (key === "search") head += " · points of final score difference";
      box.append(KB.html("p", "analysis-head", head));
      const table = KB.html("table", "");
      for (const m of part.moves) {
        const tr = KB.html("tr", "");
        const num = key === "policy" ? `${(100 * m.probability).toFixed(1)}%` : m.value.toFixed(2);
        tr.append(KB.html("td", "", m.text), KB.html("td", "num", num));
        table.append(tr);
      }
      box.append(table);
    }
    return box;
  }

  function show(k) {
    step = Math.max(0, Math.min(last, k));
    const p = R.positions[step];
    const v = p.view;
    let status = `${R.game} · turn ${p.turn} · position ${step} of ${last}`;
    status += p.over ? ` · game over (${p.end}) · scores ${p.scores.join(" / ")}` :
      ` · player ${p.to_move} (${R.names[p.to_move]}) to move · ${p.phase} step`;
    $("status").textContent = status;
    $("board").innerHTML = "";
    $("board").append(KB.draw(v, null), KB.players(v, R.names, p.to_move, []));
    $("hands").innerHTML = "";
    (v.hands || []).forEach((cards, seat) => $("hands").append(KB.hand(cards, seat, `Player ${seat}'s hand`)));
    $("result").innerHTML = "";
    $("result").hidden = !p.over;
    if (p.over) $("result").append(KB.result(v, R.names, []));
    $("next").textContent = step < last ? `next move: player ${R.moves[step].seat}: ${R.moves[step].text}` : "the end";
    $("analysis").innerHTML = "";
    const searched = (R.searches || {})[String(step)];
    const a = R.analyses[String(step)] || (searched && !p.over ? {seat: p.to_move, search: searched} : null);
    if (a) $("analysis").append(analysisBox(a));
    $("scrub").value = String(step);
    for (const li of document.querySelectorAll("#log li")) li.classList.toggle("current", Number(li.value) === step);
  }

  $("title").textContent = `${R.game}: ${R.names.join(" · ")}${R.seed !== null ? ` · seed ${R.seed}` : ""}`;
  $("scrub").max = String(last);
  for (const m of R.moves) {
    const li = KB.html("li", "", `player ${m.seat}: ${m.text}${R.analyses[String(m.step - 1)] ? " (analysed)" : ""}`);
    li.value = m.step;
    if (m.search) {
      li.classList.add(m.search.agrees ? "search-agrees" : "search-differs");
      li.append(KB.html("span", "search-note", KB.searchNote(m.search)));
    }
    li.addEventListener("click", () => show(m.step));
    $("log").append(li);
  }
  $("first").addEventListener("click", () => show(0));
  $("back").addEventListener("click", () => show(step - 1));
  $("forward").addEventListener("click", () => show(step + 1));
  $("last").addEventListener("click", () => show(last));
  $("scrub").addEventListener("input", () => show(Number($("scrub").value)));
  document.addEventListener("keydown", (e) => {
    const to = {ArrowLeft: step - 1, ArrowRight: step + 1, Home: 0, End: last}[e.key];
    if (to !== undefined) { e.preventDefault(); show(to); }
  });
  show(last);
})();
