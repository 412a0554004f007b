/* The board of both games, drawn from one seat's view (or the full state) as the API sends it.
   The look follows the project's pictures (keltis_env/games/GAME/render_image.py): the same
   colours of paths, players, goal band and tiles. Every card shown carries data-card="KIND"
   (colour * 11 + value), so a test can count the cards a page holds. */
"use strict";

const KB = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = ["red", "yellow", "green", "blue", "pink"];
  const PATH_RGB = [[214, 48, 49], [236, 184, 18], [46, 158, 82], [38, 110, 204], [222, 92, 166]];
  const PLAYER_RGB = [[38, 38, 42], [250, 250, 250], [240, 128, 0], [122, 70, 190]];
  const ROW_VALUES = [0, -4, -3, -2, 1, 2, 3, 6, 7, 10];
  const NUM_VALUES = 11;
  const TILE = {1: "wish", 2: "clover", 3: "1", 4: "2", 5: "3"};
  const DICE_BONUS = {1: "stone", 2: "clover", 3: "extra"};

  const rgb = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;
  const mix = (c, t) => c.map((v) => Math.round(v + (255 - v) * t));

  function el(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function html(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function cardName(kind) {
    return `${COLORS[Math.floor(kind / NUM_VALUES)]} ${kind % NUM_VALUES}`;
  }

  /** A card as an HTML chip (or button), coloured by its path. */
  function card(kind, asButton) {
    const c = Math.floor(kind / NUM_VALUES);
    const node = html(asButton ? "button" : "span", "card", String(kind % NUM_VALUES));
    if (asButton) node.type = "button";
    node.dataset.card = String(kind);
    node.title = cardName(kind);
    node.style.background = rgb(PATH_RGB[c]);
    node.style.color = c === 1 ? "#28241e" : "#fff";
    return node;
  }

  function figure(svg, x, y, player, large) {
    const r = large ? 11 : 7.5;
    svg.append(el("circle", {cx: x, cy: y, r, fill: rgb(PLAYER_RGB[player]), stroke: large ? "#d4a014" : "#141414",
      "stroke-width": large ? 3 : 1.5, class: `figure p${player}${large ? " large" : ""}`}));
  }

  function tileIcon(svg, x, y, code) {
    const name = TILE[code];
    if (!name) return;
    if (name === "wish") {
      svg.append(el("circle", {cx: x, cy: y, r: 7, fill: "#50aad7", stroke: "#1e5078", class: "tile wish"}));
    } else if (name === "clover") {
      svg.append(el("text", {x, y: y + 6, "text-anchor": "middle", "font-size": 17, fill: "#288c32",
        class: "tile clover"}, "\u2663"));
    } else {
      svg.append(el("circle", {cx: x, cy: y, r: 8, fill: "#f5ce50", stroke: "#643c0a", class: "tile points"}));
      svg.append(el("text", {x, y: y + 4, "text-anchor": "middle", "font-size": 11, "font-weight": "bold",
        fill: "#643c0a"}, name));
    }
  }

  /** The card game's five paths, figures and tiles, then the discard piles and the deck. */
  function drawKeltis(view) {
    const colW = 70, rowH = 44, top = 16, left = 56, stone = 38;
    const width = left + 5 * colW + 130, height = top + 10 * rowH + 96;
    const svg = el("svg", {viewBox: `0 0 ${width} ${height}`, class: "board keltis", role: "img",
      "aria-label": "the board"});
    svg.append(el("rect", {x: 0, y: 0, width, height, rx: 10, fill: "#e5dcc6", stroke: "#b0a080"}));
    const y = (r) => top + (9 - r) * rowH;
    svg.append(el("rect", {x: left - 6, y: y(9) - 4, width: 5 * colW + 2, height: 3 * rowH, rx: 8,
      fill: "#f0cd6e", opacity: 0.7}));
    for (let r = 1; r <= 9; r++) {
      svg.append(el("text", {x: 26, y: y(r) + 24, "text-anchor": "middle", "font-size": 13,
        fill: ROW_VALUES[r] < 0 ? "#aa3228" : "#28241e"}, (ROW_VALUES[r] > 0 ? "+" : "") + ROW_VALUES[r]));
    }
    for (let c = 0; c < 5; c++) {
      const x = left + c * colW;
      for (let r = 1; r <= 9; r++) {
        const dark = r === 9 || (view.dark_rows[c] || []).includes(r);
        svg.append(el("rect", {x, y: y(r), width: stone + 18, height: stone, rx: 8,
          fill: rgb(mix(PATH_RGB[c], dark ? 0.42 : 0.70)), stroke: "#786950", class: "stone"}));
        tileIcon(svg, x + stone + 6, y(r) + 12, view.tiles[c][r]);
      }
    }
    const startY = y(0) + 4;
    svg.append(el("rect", {x: left, y: startY, width: 5 * colW - 14, height: stone - 8, rx: 8, fill: "#cec6b6",
      stroke: "#786950"}));
    svg.append(el("text", {x: 26, y: startY + 20, "text-anchor": "middle", "font-size": 11, fill: "#786e5f"}, "start"));
    placeFigures(svg, view, (c, r) => [left + c * colW + 14, r > 0 ? y(r) + stone / 2 : startY + 15]);
    drawPiles(svg, view, left, startY + stone + 4, colW);
    return svg;
  }

  function placeFigures(svg, view, at) {
    const counts = {};
    for (let p = 0; p < view.num_players; p++) {
      for (let c = 0; c < 5; c++) {
        const r = view.positions[p][c];
        if (r <= 0) continue;
        const key = `${c},${r}`;
        const i = counts[key] = (counts[key] || 0) + 1;
        const [x, yy] = at(c, r);
        figure(svg, x + (i - 1) * 9, yy + (i - 1) * 4 - 4, p, view.large[p] === c);
      }
    }
  }

  function drawPiles(svg, view, left, y0, colW) {
    for (let c = 0; c < 5; c++) {
      const pile = view.discards[c];
      const x = left + c * colW;
      const closed = view.discarded_color === c;
      const g = el("g", {class: "pile", "data-color": COLORS[c]});
      g.append(el("rect", {x, y: y0, width: 44, height: 50, rx: 5, fill: pile.length ? rgb(PATH_RGB[c]) : rgb(mix(PATH_RGB[c], 0.85)),
        stroke: closed ? "#be2828" : rgb(PATH_RGB[c]), "stroke-width": closed ? 3 : 1.5}));
      if (pile.length) {
        const top = pile[pile.length - 1];
        const t = el("text", {x: x + 22, y: y0 + 30, "text-anchor": "middle", "font-size": 18, "font-weight": "bold",
          fill: c === 1 ? "#28241e" : "#fff", "data-card": String(c * NUM_VALUES + top)}, String(top));
        g.append(t);
      }
      g.append(el("text", {x: x + 22, y: y0 + 64, "text-anchor": "middle", "font-size": 10, fill: "#786e5f"},
        closed ? "closed" : `${pile.length} card${pile.length === 1 ? "" : "s"}`));
      svg.append(g);
    }
    const dx = left + 5 * colW + 10;
    svg.append(el("rect", {x: dx, y: y0, width: 44, height: 50, rx: 5, fill: "#3c5a46", stroke: "#1e3228"}));
    svg.append(el("text", {x: dx + 22, y: y0 + 31, "text-anchor": "middle", "font-size": 15, fill: "#fff",
      class: "deck"}, String(view.deck_size)));
    svg.append(el("text", {x: dx + 22, y: y0 + 64, "text-anchor": "middle", "font-size": 10, fill: "#786e5f"},
      "draw pile"));
  }

  /** The dice game's five columns with their bonus squares and markers, then the dice. */
  function drawDice(view, pick) {
    const colW = 62, rowH = 40, top = 16, left = 56, size = 48;
    const width = left + 5 * colW + 40, height = top + 9 * rowH + 96;
    const svg = el("svg", {viewBox: `0 0 ${width} ${height}`, class: "board dice", role: "img",
      "aria-label": "the board"});
    svg.append(el("rect", {x: 0, y: 0, width, height, rx: 10, fill: "#e5dcc6", stroke: "#b0a080"}));
    const y = (r) => top + (9 - r) * rowH;
    svg.append(el("rect", {x: left - 6, y: y(9) - 4, width: 5 * colW + 2, height: 3 * rowH, rx: 8,
      fill: "#f0cd6e", opacity: 0.7}));
    for (let r = 1; r <= 9; r++) {
      svg.append(el("text", {x: 26, y: y(r) + 22, "text-anchor": "middle", "font-size": 13,
        fill: ROW_VALUES[r] < 0 ? "#aa3228" : "#28241e"}, (ROW_VALUES[r] > 0 ? "+" : "") + ROW_VALUES[r]));
      for (let c = 0; c < 5; c++) {
        const x = left + c * colW;
        svg.append(el("rect", {x, y: y(r), width: size, height: rowH - 6, rx: 6,
          fill: rgb(mix(PATH_RGB[c], 0.6)), stroke: "#786950", class: "square"}));
        const bonus = DICE_BONUS[view.bonus[c][r]];
        if (bonus === "stone") svg.append(el("ellipse", {cx: x + size - 9, cy: y(r) + 9, rx: 6, ry: 5,
          fill: "#8c8c88", stroke: "#464644", class: "bonus stone"}));
        if (bonus === "clover") svg.append(el("text", {x: x + size - 9, y: y(r) + 14, "text-anchor": "middle",
          "font-size": 15, fill: "#288c32", class: "bonus clover"}, "\u2663"));
        if (bonus === "extra") svg.append(el("text", {x: x + size - 10, y: y(r) + 14, "text-anchor": "middle",
          "font-size": 11, "font-weight": "bold", fill: "#b03460", class: "bonus extra"}, "+1"));
      }
    }
    const counts = {};
    for (let p = 0; p < view.num_players; p++) {
      for (let c = 0; c < 5; c++) {
        const r = view.positions[p][c];
        if (r <= 0) continue;
        const i = counts[`${c},${r}`] = (counts[`${c},${r}`] || 0) + 1;
        figure(svg, left + c * colW + 8 + (i - 1) * 10, y(r) + (rowH - 6) / 2, p, false);
      }
    }
    drawDiceRow(svg, view, left, y(0) + 10, pick);
    return svg;
  }

  function drawDiceRow(svg, view, left, y0, pick) {
    view.dice.forEach((face, i) => {
      const x = left + i * 62;
      const chosen = pick && pick.chosen.has(i + 1);
      const g = el("g", {class: `die${chosen ? " chosen" : ""}`, "data-die": String(i + 1)});
      g.append(el("rect", {x, y: y0, width: 44, height: 44, rx: 8,
        fill: face < 5 ? rgb(PATH_RGB[face]) : "#e2e0da", stroke: chosen ? "#d4a014" : "#3c362c",
        "stroke-width": chosen ? 4 : 1.5}));
      if (face === 5) g.append(el("ellipse", {cx: x + 22, cy: y0 + 22, rx: 11, ry: 8, fill: "#8c8c88"}));
      g.append(el("text", {x: x + 22, y: y0 + 60, "text-anchor": "middle", "font-size": 10, fill: "#786e5f"},
        `die ${i + 1}`));
      if (pick) {
        g.style.cursor = "pointer";
        g.addEventListener("click", () => pick.toggle(i + 1));
      }
      svg.append(g);
    });
  }

  /** The players' boxes: name, score and what each holds (rows of cards, or stones). */
  function players(view, names, toMove, humans) {
    const box = html("div", "players");
    for (let p = 0; p < names.length; p++) {
      const b = html("div", `player${p === toMove && view.end === "none" ? " to-move" : ""}`);
      b.dataset.seat = String(p);
      const head = html("div", "player-head");
      const sw = html("span", "swatch");
      sw.style.background = rgb(PLAYER_RGB[p]);
      head.append(sw, html("b", "", `Player ${p}`), html("span", "who", ` ${humans.includes(p) ? "you" : names[p]}`),
        html("span", "score", String((view.scores || [])[p] ?? "")));
      b.append(head);
      if (view.rows && view.wishing) {
        b.append(html("div", "facts", `wishing stones ${view.wishing[p]} · tile points ${view.tile_points[p]} · ` +
          `${view.hand_sizes[p]} cards in hand`));
        view.rows[p].forEach((row, c) => {
          if (!row.length) return;
          const line = html("div", "played");
          const arrow = view.directions[p][c] > 0 ? "\u2191" : view.directions[p][c] < 0 ? "\u2193" : "";
          line.append(html("span", "dir", arrow));
          row.forEach((v) => line.append(card(c * NUM_VALUES + v, false)));
          b.append(line);
        });
      } else if (view.stones && view.markers) {
        b.append(html("div", "facts", `stones ${view.stones[p]} · markers ${view.markers[p]} · ` +
          `upper zone ${view.upper[p]}`));
      }
      box.append(b);
    }
    return box;
  }

  /** One hand (buttons when its cards can be chosen). */
  function hand(cards, seat, label, onCard, selected) {
    const box = html("div", "hand");
    box.dataset.seat = String(seat);
    box.append(html("div", "hand-label", label));
    const row = html("div", "hand-cards");
    cards.forEach((kind) => {
      const c = card(kind, !!onCard);
      if (onCard) c.addEventListener("click", () => onCard(kind));
      if (selected === kind) c.classList.add("selected");
      row.append(c);
    });
    box.append(row);
    return box;
  }

  /** A game this page has no picture for: its view as text (what that seat may know). */
  function drawOther(view) {
    const pre = html("pre", "board other", JSON.stringify(view, null, 1));
    return pre;
  }

  /** Each player's final score by its parts: paths (figures or markers by their rows' values,
      the large figure doubled), point tiles, and stones (wishing stones, or the dice game's
      stones: what the score holds beyond the other two); null for a game this page does not know. */
  function scoreParts(view) {
    if (!view.positions || !view.scores) return null;
    return view.scores.map((total, p) => {
      let paths = view.positions[p].reduce((sum, r) => sum + ROW_VALUES[r], 0);
      if (view.large && view.large[p] >= 0) paths += ROW_VALUES[view.positions[p][view.large[p]]];
      const tiles = view.tile_points ? view.tile_points[p] : null;
      const held = view.wishing ? view.wishing[p] : view.stones ? view.stones[p] : null;
      return {total, paths, tiles, held, stones: total - paths - (tiles || 0)};
    });
  }

  /** The end of a game: who won, and each player's score by its parts. */
  function result(view, names, humans) {
    const box = html("div", "result");
    const best = Math.max(...view.scores);
    const winners = view.scores.map((s, p) => (s === best ? p : -1)).filter((p) => p >= 0);
    const who = (p) => (humans.includes(p) ? `you (player ${p})` : `player ${p} (${names[p]})`);
    box.append(html("p", "winner", winners.length === 1 ? `Winner: ${who(winners[0])} with ${best} points` :
      `A shared victory: ${winners.map(who).join(" and ")}, ${best} points each`));
    const parts = scoreParts(view);
    if (!parts) return box;
    const keltis = Boolean(view.tile_points);
    const table = html("table", "scores");
    const head = html("tr", "");
    for (const t of ["player", "paths", ...(keltis ? ["point tiles"] : []), keltis ? "wishing stones" : "stones",
      "total"]) head.append(html("th", "", t));
    table.append(head);
    parts.forEach((part, p) => {
      const tr = html("tr", winners.includes(p) ? "won" : "");
      tr.append(html("td", "", who(p)), html("td", "num", String(part.paths)));
      if (keltis) tr.append(html("td", "num", String(part.tiles)));
      tr.append(html("td", "num", `${part.stones} (${part.held} held)`), html("td", "num total", String(part.total)));
      table.append(tr);
    });
    box.append(table);
    return box;
  }

  /** The picture of a view: the card game, the dice game, or the view as text. */
  function draw(view, pick) {
    if (view.rows && view.tiles) return drawKeltis(view);
    if (view.dice && view.bonus) return drawDice(view, pick);
    return drawOther(view);
  }

  /** A move's mark against the search's choice (the server's search mark: choice, agrees,
      lost in points of final score difference, null where the search did not play the move out;
      dropped: the halving dropped the move after `samples` sampled worlds). */
  function searchNote(mark) {
    if (mark.agrees) return " \u2713 the search's choice";
    let note = ` \u2717 the search: ${mark.choice}`;
    if (mark.lost === null) return `${note} (this move was not searched: ranked too far below)`;
    const points = `${Math.abs(mark.lost).toFixed(2)} points`;
    if (!mark.dropped) return `${note} (lost ${points})`;
    return `${note} (dropped after ${mark.samples} sampled worlds, ` +
      (mark.lost >= 0 ? `lost ${points} in them)` : `though ${points} better in them: too few to tell)`);
  }

  return {COLORS, cardName, card, draw, players, hand, html, result, scoreParts, searchNote};
})();
