// capa's page: an analysis board for chess, Capablanca chess and Go (moves
// as a tree with variations), live analysis over server-sent events (Go's
// with score leads and an ownership map), play against the network, the
// opening explorer, and a run's dashboard. Plain JavaScript and SVG, no
// libraries.
'use strict';

const $ = (id) => document.getElementById(id);
const SVG = 'http://www.w3.org/2000/svg';
const SQUARE = 100;

// ---- the server ----

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
  if (!response.ok) throw new Error(body.error || `the server answered ${response.status}`);
  return body;
}

function query(params) {
  return Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
}

function showError(message) {
  const box = $('error');
  box.textContent = message;
  box.hidden = !message;
}

// ---- pieces, drawn in a 100x100 box ----

const BASE = '<path d="M22 90 H78 V82 Q50 74 22 82 Z"/>';
const KNIGHT = 'M30 82 C30 62 40 54 47 46 C39 48 31 52 26 48 C21 43 27 35 35 29 C41 23 45 17 50 13 L54 20 C70 24 77 46 72 82 Z';
const SHAPES = {
  p: BASE + '<path d="M36 82 Q38 58 44 50 H56 Q62 58 64 82 Z"/><circle cx="50" cy="36" r="13"/>',
  r: BASE + '<path d="M31 82 L34 42 H66 L69 82 Z"/><path d="M28 42 V22 H37 V30 H45.5 V22 H54.5 V30 H63 V22 H72 V42 Z"/>',
  b: BASE + '<path d="M34 82 Q40 64 42 60 H58 Q60 64 66 82 Z"/><path d="M50 20 C30 36 34 54 42 60 H58 C66 54 70 36 50 20 Z"/><circle cx="50" cy="15" r="6"/><path class="detail" d="M47 33 L58 45"/>',
  n: `<path d="${KNIGHT}"/>` + BASE + '<circle class="eye" cx="39" cy="33" r="2.6"/>',
  q: BASE + '<path d="M32 82 L22 34 L37 56 L40 26 L50 52 L60 26 L63 56 L78 34 L68 82 Z"/><circle cx="22" cy="30" r="5"/><circle cx="40" cy="22" r="5"/><circle cx="60" cy="22" r="5"/><circle cx="78" cy="30" r="5"/>',
  k: BASE + '<path d="M31 82 C26 62 30 46 50 44 C70 46 74 62 69 82 Z"/><path d="M46 12 H54 V22 H62 V30 H54 V44 H46 V30 H38 V22 H46 Z"/>',
  // The archbishop (bishop + knight): a knight's head wearing a bishop's mitre and ball.
  a: `<path d="${KNIGHT}"/>` + BASE + '<path d="M58 8 C50 14 50 22 53 27 H63 C66 22 66 14 58 8 Z"/><circle cx="58" cy="6" r="3.5"/><path class="detail" d="M40 58 L62 40"/><circle class="eye" cx="39" cy="33" r="2.6"/>',
  // The chancellor (rook + knight): a knight's head rising from a rook's battlements.
  c: `<path d="M34 70 C34 56 41 50 47 44 C39 46 31 50 26 46 C21 41 27 33 35 27 C41 21 45 15 50 11 L54 18 C70 22 76 44 70 70 Z"/>` +
     '<path d="M24 90 V68 H33 V74 H43 V68 H57 V74 H67 V68 H76 V90 Z"/><circle class="eye" cx="39" cy="31" r="2.6"/>',
};

function pieceGroup(letter) {
  const white = letter === letter.toUpperCase();
  const g = document.createElementNS(SVG, 'g');
  g.setAttribute('class', `piece ${white ? 'white' : 'black'}`);
  g.dataset.piece = letter;
  g.innerHTML = SHAPES[letter.toLowerCase()] || `<text x="50" y="62" text-anchor="middle" font-size="40">${letter}</text>`;
  g.setAttribute('fill', white ? '#fafafa' : '#2b2b2b');
  g.setAttribute('stroke', white ? '#1e1e1e' : '#000');
  g.setAttribute('stroke-width', '2.5');
  g.setAttribute('stroke-linejoin', 'round');
  for (const d of g.querySelectorAll('.detail')) { d.setAttribute('fill', 'none'); d.setAttribute('stroke', white ? '#1e1e1e' : '#e0e0e0'); }
  for (const e of g.querySelectorAll('.eye')) { e.setAttribute('fill', white ? '#1e1e1e' : '#e0e0e0'); e.setAttribute('stroke', 'none'); }
  return g;
}

// ---- the game: a tree of moves ----

let nextId = 1;
function newNode(parent, uci, san) {
  return { id: nextId++, parent, uci, san, children: [], view: null, eval: null };
}

const state = {
  info: null,
  game: 'capablanca',
  startFen: '',
  root: newNode(null, null, null),
  node: null,
  selected: null,
  flipped: false,
  analysing: false,
  source: null,
  snapshot: null,
  playing: false,
  loadSerial: 0,
  // Go: the hovered move's principal variation, drawn on the board.
  pv: null,
};
state.node = state.root;

function pathTo(node) {
  const moves = [];
  for (let n = node; n.parent; n = n.parent) moves.push(n);
  return moves.reverse();
}

function positionParams(node) {
  return { game: state.game, fen: state.startFen, moves: pathTo(node).map((n) => n.uci).join(' ') };
}

async function viewOf(node) {
  if (!node.view) node.view = await api(`/api/position?${query(positionParams(node))}`);
  return node.view;
}

function findNode(id, node = state.root) {
  if (node.id === id) return node;
  for (const child of node.children) {
    const found = findNode(id, child);
    if (found) return found;
  }
  return null;
}

async function goTo(node) {
  const serial = ++state.loadSerial;
  try {
    await viewOf(node);
  } catch (e) {
    showError(e.message);
    return;
  }
  if (serial !== state.loadSerial) return;
  state.node = node;
  state.selected = null;
  state.pv = null;
  showError('');
  render();
  if (state.analysing) {
    // Stepping through a game restarts the analysis once the steps pause.
    stopAnalysis();
    clearTimeout(state.restart);
    state.restart = setTimeout(() => { if (state.analysing && state.node === node) startAnalysis(); }, 150);
  }
  refreshExplorer();
  maybeNetworkMove();
}

async function playMove(uci) {
  const view = state.node.view;
  const legal = view.legal.find((m) => m.uci === uci);
  if (!legal) return;
  let child = state.node.children.find((c) => c.uci === uci);
  if (!child) {
    child = newNode(state.node, uci, legal.san);
    state.node.children.push(child);
  }
  await goTo(child);
}

function resetGame(game, fen, moves, sans) {
  state.game = game;
  $('game-select').value = game;
  showGameControls();
  state.startFen = fen || '';
  state.root = newNode(null, null, null);
  let node = state.root;
  for (const [i, uci] of (moves || []).entries()) {
    const child = newNode(node, uci, sans ? sans[i] : null);
    node.children.push(child);
    node = child;
  }
  return node;
}

// ---- the board ----

function squareName(file, rank) {
  return String.fromCharCode(97 + file) + (rank + 1);
}

function parsePlacement(fen, files, ranks) {
  const board = [];
  const rows = fen.split(' ')[0].split('/');
  for (let r = 0; r < ranks; r++) {
    const rank = ranks - 1 - r;
    let file = 0;
    const row = rows[r] || '';
    for (let i = 0; i < row.length; i++) {
      const c = row[i];
      if (c >= '0' && c <= '9') {
        let digits = c;
        while (i + 1 < row.length && row[i + 1] >= '0' && row[i + 1] <= '9') digits += row[++i];
        file += parseInt(digits, 10);
      } else {
        board.push({ square: squareName(file, rank), piece: c });
        file++;
      }
    }
  }
  return board;
}

function squareXY(name, view) {
  const file = name.charCodeAt(0) - 97;
  const rank = parseInt(name.slice(1), 10) - 1;
  const x = state.flipped ? view.files - 1 - file : file;
  const y = state.flipped ? rank : view.ranks - 1 - rank;
  return [x * SQUARE, y * SQUARE];
}

function splitUci(uci) {
  const m = /^([a-z])(\d+)([a-z])(\d+)([a-z]?)$/.exec(uci);
  return m ? { from: m[1] + m[2], to: m[3] + m[4], promotion: m[5] } : null;
}

function render() {
  const view = state.node.view;
  renderBoard(view);
  $('prisoners').textContent = view.prisoners ? `prisoners: black ${view.prisoners[0]}, white ${view.prisoners[1]}` : '';
  renderMoveList();
  $('fen').value = view.fen;
  $('result').textContent = view.ending ? `${view.ending.result} (${view.ending.reason})` : '';
  renderGraph();
  renderAnalysis();
}

function renderBoard(view) {
  if (isGo()) { renderGoBoard(view); return; }
  const svg = $('board');
  svg.setAttribute('viewBox', `0 0 ${view.files * SQUARE} ${view.ranks * SQUARE}`);
  svg.innerHTML = '';
  const last = state.node.uci ? splitUci(state.node.uci) : null;
  const pieces = parsePlacement(view.fen, view.files, view.ranks);
  const kingInCheck = view.check ? pieces.find((p) => p.piece === (view.turn === 'w' ? 'K' : 'k')) : null;
  const targets = state.selected ? view.legal.map((m) => splitUci(m.uci)).filter((m) => m && m.from === state.selected) : [];
  for (let rank = 0; rank < view.ranks; rank++) {
    for (let file = 0; file < view.files; file++) {
      const name = squareName(file, rank);
      const [x, y] = squareXY(name, view);
      const rect = document.createElementNS(SVG, 'rect');
      const classes = ['square', (file + rank) % 2 === 0 ? 'dark' : 'light'];
      if (last && (last.from === name || last.to === name)) classes.push('last');
      if (state.selected === name) classes.push('selected');
      if (kingInCheck && kingInCheck.square === name) classes.push('check');
      rect.setAttribute('class', classes.join(' '));
      rect.setAttribute('x', x); rect.setAttribute('y', y);
      rect.setAttribute('width', SQUARE); rect.setAttribute('height', SQUARE);
      rect.dataset.square = name;
      svg.appendChild(rect);
    }
  }
  for (let i = 0; i < view.files; i++) {
    const t = document.createElementNS(SVG, 'text');
    t.setAttribute('class', 'coord');
    const file = state.flipped ? view.files - 1 - i : i;
    t.setAttribute('x', i * SQUARE + SQUARE - 12); t.setAttribute('y', view.ranks * SQUARE - 4);
    t.textContent = String.fromCharCode(97 + file);
    svg.appendChild(t);
  }
  for (let i = 0; i < view.ranks; i++) {
    const t = document.createElementNS(SVG, 'text');
    t.setAttribute('class', 'coord');
    const rank = state.flipped ? i + 1 : view.ranks - i;
    t.setAttribute('x', 3); t.setAttribute('y', i * SQUARE + 15);
    t.textContent = rank;
    svg.appendChild(t);
  }
  for (const { square, piece } of pieces) {
    const [x, y] = squareXY(square, view);
    const g = pieceGroup(piece);
    g.setAttribute('transform', `translate(${x},${y})`);
    g.dataset.square = square;
    svg.appendChild(g);
  }
  for (const t of targets) {
    const [x, y] = squareXY(t.to, view);
    const dot = document.createElementNS(SVG, 'circle');
    dot.setAttribute('class', 'hint');
    dot.setAttribute('cx', x + SQUARE / 2); dot.setAttribute('cy', y + SQUARE / 2);
    dot.setAttribute('r', pieces.some((p) => p.square === t.to) ? 46 : 15);
    if (pieces.some((p) => p.square === t.to)) { dot.setAttribute('fill', 'none'); dot.setAttribute('stroke', 'rgba(20,85,30,0.45)'); dot.setAttribute('stroke-width', 7); dot.style.fill = 'none'; }
    svg.appendChild(dot);
  }
  drawArrows(view);
}

function drawArrows(view) {
  const snapshot = state.snapshot;
  if (!snapshot || snapshot.fen !== view.fen) return;
  const svg = $('board');
  const total = snapshot.moves.reduce((s, m) => s + m.n, 0) || 1;
  const shown = snapshot.moves.filter((m) => m.n > 0).slice(0, 5);
  shown.forEach((m, i) => {
    const parts = splitUci(m.uci);
    if (!parts) return;
    const [x1, y1] = squareXY(parts.from, view).map((v) => v + SQUARE / 2);
    const [x2, y2] = squareXY(parts.to, view).map((v) => v + SQUARE / 2);
    const share = m.n / total;
    const width = 6 + 16 * share;
    const angle = Math.atan2(y2 - y1, x2 - x1);
    const head = width * 2.2;
    const ex = x2 - Math.cos(angle) * head, ey = y2 - Math.sin(angle) * head;
    const nx = -Math.sin(angle), ny = Math.cos(angle);
    const points = [
      [x1 + nx * width / 2, y1 + ny * width / 2], [ex + nx * width / 2, ey + ny * width / 2],
      [ex + nx * head / 1.4, ey + ny * head / 1.4], [x2, y2], [ex - nx * head / 1.4, ey - ny * head / 1.4],
      [ex - nx * width / 2, ey - ny * width / 2], [x1 - nx * width / 2, y1 - ny * width / 2],
    ];
    const arrow = document.createElementNS(SVG, 'polygon');
    arrow.setAttribute('class', 'arrow');
    arrow.dataset.move = m.uci;
    arrow.setAttribute('points', points.map((p) => p.join(',')).join(' '));
    arrow.setAttribute('fill', i === 0 ? 'rgba(21,120,27,0.75)' : `rgba(47,111,191,${0.25 + 0.5 * share})`);
    svg.appendChild(arrow);
  });
}

function squareAt(event) {
  const svg = $('board');
  const point = svg.createSVGPoint();
  point.x = event.clientX; point.y = event.clientY;
  const p = point.matrixTransform(svg.getScreenCTM().inverse());
  const view = state.node.view;
  let x = Math.floor(p.x / SQUARE), y = Math.floor(p.y / SQUARE);
  if (x < 0 || y < 0 || x >= view.files || y >= view.ranks) return null;
  const file = state.flipped ? view.files - 1 - x : x;
  const rank = state.flipped ? y : view.ranks - 1 - y;
  return squareName(file, rank);
}

let dragFrom = null;

function onPointerDown(event) {
  if (isGo()) { goClick(event); return; }
  const square = squareAt(event);
  if (!square) return;
  const view = state.node.view;
  if (state.selected && state.selected !== square && tryMove(state.selected, square)) return;
  const movable = view.legal.some((m) => splitUci(m.uci)?.from === square);
  state.selected = movable ? square : null;
  dragFrom = movable ? square : null;
  renderBoard(view);
}

function onPointerUp(event) {
  const square = squareAt(event);
  if (dragFrom && square && square !== dragFrom) tryMove(dragFrom, square);
  dragFrom = null;
}

function tryMove(from, to) {
  const view = state.node.view;
  const moves = view.legal.filter((m) => { const p = splitUci(m.uci); return p && p.from === from && p.to === to; });
  if (moves.length === 0) return false;
  if (moves.length === 1) { playMove(moves[0].uci); return true; }
  choosePromotion(moves, view.turn);
  return true;
}

function choosePromotion(moves, turn) {
  const box = $('promotion');
  box.innerHTML = '';
  for (const m of moves) {
    const letter = splitUci(m.uci).promotion;
    const button = document.createElement('button');
    button.dataset.promotion = letter;
    button.title = m.san;
    const svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', '0 0 100 100');
    svg.appendChild(pieceGroup(turn === 'w' ? letter.toUpperCase() : letter));
    button.appendChild(svg);
    button.onclick = () => { box.hidden = true; playMove(m.uci); };
    box.appendChild(button);
  }
  const cancel = document.createElement('button');
  cancel.textContent = '×';
  cancel.onclick = () => { box.hidden = true; state.selected = null; renderBoard(state.node.view); };
  box.appendChild(cancel);
  box.hidden = false;
}

// ---- the move list ----

function renderMoveList() {
  const list = $('movelist');
  list.innerHTML = '';
  const startPly = plyOf(state.root.view);
  const addLine = (node, ply, container, forceNumber) => {
    let first = forceNumber;
    for (let n = node; n; ) {
      const child = n.children[0];
      if (!child) break;
      addMove(child, ply, container, first);
      first = false;
      for (const variation of n.children.slice(1)) {
        const span = document.createElement('span');
        span.className = 'variation';
        span.append(' (');
        addMove(variation, ply, span, true);
        addLine(variation, ply + 1, span, false);
        span.append(') ');
        container.appendChild(span);
        first = true;
      }
      n = child;
      ply++;
    }
  };
  addLine(state.root, startPly, list, true);
  list.querySelector('.current')?.scrollIntoView({ block: 'nearest' });
}

function plyOf(view) {
  if (!view) return 0;
  const fields = view.fen.split(' ');
  // Go's text form ends with the plies played.
  if (isGo()) return parseInt(fields[fields.length - 1], 10) || 0;
  const fullmove = parseInt(fields[fields.length - 1], 10) || 1;
  return (fullmove - 1) * 2 + (view.turn === 'b' ? 1 : 0);
}

function addMove(node, ply, container, forceNumber) {
  if (isGo()) {
    const number = document.createElement('span');
    number.className = 'number';
    number.textContent = `${ply + 1}.`;
    container.appendChild(number);
  } else if (ply % 2 === 0 || forceNumber) {
    const number = document.createElement('span');
    number.className = 'number';
    number.textContent = `${Math.floor(ply / 2) + 1}${ply % 2 === 0 ? '.' : '...'}`;
    container.appendChild(number);
  }
  const span = document.createElement('span');
  span.className = 'move' + (node === state.node ? ' current' : '');
  span.textContent = node.san || node.uci;
  span.dataset.node = node.id;
  span.onclick = () => goTo(node);
  container.append(' ', span);
}

function pgnText() {
  const tags = [['Event', 'capa analysis'], ['Site', 'capa gui'], ['Result', state.node.view.ending?.result || '*']];
  if (state.game === 'capablanca') tags.push(['Variant', 'Capablanca']);
  if (state.startFen) { tags.push(['SetUp', '1']); tags.push(['FEN', state.startFen]); }
  let text = tags.map(([k, v]) => `[${k} "${v}"]`).join('\n') + '\n\n';
  const startPly = plyOf(state.root.view);
  const line = (node, ply, forceNumber) => {
    let out = '';
    let first = forceNumber;
    for (let n = node; n.children.length; n = n.children[0], ply++) {
      const [main, ...others] = n.children;
      out += (ply % 2 === 0 ? `${Math.floor(ply / 2) + 1}. ` : first ? `${Math.floor(ply / 2) + 1}... ` : '') + main.san + ' ';
      first = false;
      for (const v of others) {
        out += `(${ply % 2 === 0 ? `${Math.floor(ply / 2) + 1}. ` : `${Math.floor(ply / 2) + 1}... `}${v.san} ${line(v, ply + 1, false).trim()}) `;
        first = true;
      }
    }
    return out;
  };
  return text + line(state.root, startPly, true) + (state.node.view.ending?.result || '*') + '\n';
}

// ---- analysis ----

function stopAnalysis() {
  if (state.source) { state.source.close(); state.source = null; }
}

function startAnalysis() {
  stopAnalysis();
  const info = state.info;
  if (!info.network) { showError('no network: start capa gui with --net NET to analyse'); setAnalysing(false); return; }
  if (info.network.game !== state.game) { showError(`the network plays ${info.network.game}: switch the board's game`); setAnalysing(false); return; }
  const node = state.node;
  if (node.view.ending) { state.snapshot = null; renderAnalysis(); return; }
  const params = { ...positionParams(node), cpuct: $('cpuct').value, contempt: $('contempt').value, multipv: $('multipv').value };
  const source = new EventSource(`/api/analyse?${query(params)}`);
  state.source = source;
  source.addEventListener('snapshot', (event) => {
    if (state.source !== source) return;
    const snapshot = JSON.parse(event.data);
    snapshot.fen = node.view.fen;
    state.snapshot = snapshot;
    const best = snapshot.moves[0];
    if (best) node.eval = whiteScore(node.view.turn, best);
    if (snapshot.done) { source.close(); state.source = null; }
    renderBoard(state.node.view);
    renderAnalysis();
    renderGraph();
  });
  source.addEventListener('failure', (event) => { showError(`analysis failed: ${event.data}`); stopAnalysis(); });
  source.onerror = () => {
    if (state.source === source) { source.close(); state.source = null; showError('the analysis stopped: the server refused or closed it (see /api/info)'); }
  };
}

function setAnalysing(on) {
  state.analysing = on;
  $('analyse').textContent = on ? 'Stop' : 'Start';
  if (on) startAnalysis(); else stopAnalysis();
}

// Expected score for White of a move with value q and draw d for the side to move.
function whiteScore(turn, m) {
  let score = m.mate ? (m.mate > 0 ? 1 : 0) : (1 + m.q) / 2;
  return turn === 'w' ? score : 1 - score;
}

function scoreText(m) {
  if (isGo()) return `${(50 * (1 + m.q)).toFixed(1)}%${m.score_lead == null ? '' : ' ' + leadText(m.score_lead, state.node.view.turn)}`;
  if (m.mate) return m.mate > 0 ? `#${m.mate}` : `-#${-m.mate}`;
  if (m.proven_draw) return '=0.00';
  const cp = 90 * Math.tan(1.5637541897 * Math.max(-0.999, Math.min(0.999, m.q)));
  return (cp >= 0 ? '+' : '') + (cp / 100).toFixed(2);
}

function wdlOf(m) {
  const w = Math.max(0, Math.min(1, (1 + m.q - m.d) / 2));
  const d = Math.max(0, Math.min(1 - w, m.d));
  return [w, d, 1 - w - d];
}

function renderAnalysis() {
  const body = $('analysis-table').tBodies[0];
  const pvs = $('pvs');
  const snapshot = state.snapshot;
  const view = state.node.view;
  if (!snapshot || snapshot.fen !== view.fen) {
    body.innerHTML = ''; pvs.innerHTML = ''; $('analysis-stats').textContent = '';
    setEvalBar(state.node.eval);
    return;
  }
  const lead = snapshot.score_lead == null ? '' : `, score ${leadText(snapshot.score_lead, view.turn)} ± ${snapshot.score_stdev.toFixed(1)}`;
  $('analysis-stats').textContent = `${snapshot.playouts} playouts, ${snapshot.visits} visits, ${Math.round(snapshot.nps)}/s, ${(snapshot.ms / 1000).toFixed(1)} s${lead}${snapshot.done ? ', done' : ''}`;
  // The rows are new: a hovered one says so again (the browser sends
  // mouseenter to a row drawn under the pointer), a removed one never will.
  state.pv = null;
  body.innerHTML = '';
  snapshot.moves.forEach((m, i) => {
    const [w, d, l] = wdlOf(m);
    const row = body.insertRow();
    row.dataset.move = m.uci;
    if (i === 0) row.className = 'best';
    const cells = isGo()
      ? [m.san, m.n, `${(100 * m.p).toFixed(1)}%`, `${(50 * (1 + m.q)).toFixed(1)}%`, m.score_lead == null ? '' : leadText(m.score_lead, view.turn), null, m.m.toFixed(1)]
      : [m.san, m.n, `${(100 * m.p).toFixed(1)}%`, m.mate ? scoreText(m) : m.q.toFixed(3), m.d.toFixed(3), null, m.m.toFixed(1)];
    cells.forEach((text, c) => {
      const cell = row.insertCell();
      if (c === 5) {
        cell.innerHTML = `<span class="wdl" title="${(w * 100).toFixed(1)} / ${(d * 100).toFixed(1)} / ${(l * 100).toFixed(1)}"><span style="width:${w * 100}%"></span><span style="width:${d * 100}%"></span><span style="width:${l * 100}%"></span></span>`;
      } else cell.textContent = text;
    });
    row.onclick = () => playMove(m.uci);
    row.onmouseenter = () => showPv(m);
    row.onmouseleave = () => showPv(null);
  });
  pvs.innerHTML = '';
  for (const m of snapshot.moves.filter((m) => m.pv.length)) {
    const div = document.createElement('div');
    div.textContent = `${scoreText(m)}  ${m.pv.join(' ')}`;
    pvs.appendChild(div);
  }
  setEvalBar(state.node.eval);
}

function setEvalBar(score) {
  $('evalbar-white').style.height = `${100 * (score ?? 0.5)}%`;
  $('evalbar-text').textContent = score == null ? '' : `${(100 * score).toFixed(0)}%`;
}

function renderGraph() {
  const svg = $('graph');
  const line = [state.root];
  while (line[line.length - 1].children.length) line.push(line[line.length - 1].children[0]);
  const width = 600, height = 120;
  const step = width / Math.max(1, line.length - 1);
  let html = `<line x1="0" y1="${height / 2}" x2="${width}" y2="${height / 2}" stroke="#ccc"/>`;
  const points = line.map((n, i) => (n.eval == null ? null : [i * step, height * (1 - n.eval)]));
  const known = points.filter(Boolean);
  if (known.length > 1) html += `<polyline fill="none" stroke="#2f6fbf" stroke-width="2" points="${known.map((p) => p.join(',')).join(' ')}"/>`;
  line.forEach((n, i) => {
    if (n === state.node) html += `<line x1="${i * step}" y1="0" x2="${i * step}" y2="${height}" stroke="#c62828"/>`;
    html += `<rect data-node="${n.id}" x="${i * step - step / 2}" y="0" width="${step}" height="${height}" fill="transparent"/>`;
  });
  svg.innerHTML = html;
  for (const rect of svg.querySelectorAll('rect')) rect.onclick = () => goTo(findNode(Number(rect.dataset.node)));
}

// ---- play against the network ----

async function maybeNetworkMove(force) {
  const side = $('play-side').value;
  const view = state.node.view;
  if (state.playing || view.ending || (!force && side !== view.turn)) return;
  if (!state.info.network) { showError('no network: start capa gui with --net NET to play'); return; }
  state.playing = true;
  const node = state.node;
  try {
    const answer = await api(`/api/play?${query({ ...positionParams(node), playouts: $('playouts').value })}`);
    if (state.node === node) await playMove(answer.uci);
  } catch (e) {
    showError(e.message);
  } finally {
    state.playing = false;
  }
}

// ---- the explorer ----

async function refreshExplorer() {
  const explorers = state.info.explorers.filter((e) => e.game === state.game);
  const body = $('explorer-table').tBodies[0];
  const games = $('explorer-games').tBodies[0];
  if (!explorers.length) {
    body.innerHTML = ''; games.innerHTML = '';
    $('explorer-summary').textContent = `(no ${state.game} games given: --games FILES or --run DIR)`;
    return;
  }
  const node = state.node;
  let answer;
  try {
    answer = await api(`/api/explorer?${query(positionParams(node))}`);
  } catch (e) { showError(e.message); return; }
  if (state.node !== node) return;
  $('explorer-summary').textContent = `${answer.total} games through here, ${answer.ended_here} ended here (${answer.ms.toFixed(1)} ms)`;
  body.innerHTML = '';
  for (const m of answer.moves) {
    const row = body.insertRow();
    row.dataset.move = m.uci;
    const decided = m.white + m.draws + m.black || 1;
    row.insertCell().textContent = m.san;
    row.insertCell().textContent = m.games;
    row.insertCell().innerHTML = `<span class="wdl" title="${m.white} / ${m.draws} / ${m.black}"><span style="width:${100 * m.white / decided}%"></span><span style="width:${100 * m.draws / decided}%"></span><span style="width:${100 * m.black / decided}%"></span></span>`;
    row.insertCell().textContent = m.white_score == null ? '' : `${(100 * m.white_score).toFixed(1)}%`;
    row.onclick = () => playMove(m.uci);
  }
  games.innerHTML = '';
  for (const g of answer.games) {
    const row = games.insertRow();
    row.dataset.game = g.id;
    for (const text of [g.white, g.black, g.result, g.plies, g.source]) row.insertCell().textContent = text;
    row.onclick = () => openGame(api(`/api/archive/game?${query({ game: state.game, id: g.id })}`), pathTo(node).length);
  }
}

async function openGame(request, ply) {
  try {
    const game = await request;
    stopAnalysis();
    let node = resetGame(game.game, game.fen === startFenOf(game.game) ? '' : game.fen, game.moves, game.sans);
    const line = pathTo(node);
    addVariations([state.root, ...line], game.variations || []);
    if (ply !== undefined && ply <= line.length) node = ply === 0 ? state.root : line[ply - 1];
    showTab('board');
    await goTo(node);
  } catch (e) { showError(e.message); }
}

// Hangs each variation (an SGF's) beside the move of `line` it replaces.
function addVariations(line, variations) {
  for (const variation of variations) {
    let node = line[variation.at];
    if (!node) continue;
    const nodes = [node];
    for (const vertex of variation.moves) {
      let child = node.children.find((c) => c.uci === vertex);
      if (!child) { child = newNode(node, vertex, vertex); node.children.push(child); }
      node = child;
      nodes.push(node);
    }
    addVariations(nodes, variation.variations);
  }
}

const START_FENS = {};
function startFenOf(game) { return START_FENS[game]; }

// ---- games as text: PGN for chess, SGF for Go ----

async function loadGameText(text) {
  try {
    // SGF starts with its game tree's `(`; anything else is read as PGN.
    const sgf = text.trimStart().startsWith('(');
    const game = await api(sgf ? '/api/sgf' : '/api/pgn', { method: 'POST', body: text, headers: { 'content-type': 'text/plain' } });
    await openGame(Promise.resolve(game));
  } catch (e) { showError(e.message); }
}

function gameText() { return isGo() ? sgfText() : pgnText(); }

// The game tree as SGF (FF[4]): the start's setup stones and komi, every
// variation, the result when the game has ended.
function sgfText() {
  const size = goSize();
  // The start's text form (a loaded game's root may not have been drawn).
  const fen = state.startFen || START_FENS[state.game];
  const fields = fen.split(' ');
  const start = { fen, turn: fields[1] };
  const komi = fields[4] || '7.5';
  const point = (p) => String.fromCharCode(97 + (p % size)) + String.fromCharCode(97 + size - 1 - Math.floor(p / size));
  const stones = goStones(start.fen, size);
  const setup = (letter) => stones.map((s, p) => (s === letter ? `[${point(p)}]` : '')).join('');
  const black = setup('X'), white = setup('O');
  let text = `(;GM[1]FF[4]CA[UTF-8]AP[capa]SZ[${size}]KM[${komi}]RU[Chinese]`;
  if (black) text += `AB${black}`;
  if (white) text += `AW${white}`;
  if (black || white || start.turn === 'w') text += `PL[${start.turn === 'w' ? 'W' : 'B'}]`;
  const end = state.node.view.ending;
  if (end) text += `RE[${end.result}]`;
  const move = (node, depth) => {
    const color = (depth % 2 === 0) === (start.turn === 'b') ? 'B' : 'W';
    return `;${color}[${node.uci === 'pass' ? '' : point(goPoint(node.uci, size))}]`;
  };
  const line = (node, depth) => {
    let out = '';
    let n = node;
    while (n.children.length === 1) { n = n.children[0]; out += move(n, depth++); }
    if (n.children.length > 1) out += n.children.map((c) => `(${move(c, depth)}${line(c, depth + 1)})`).join('');
    return out;
  };
  return `${text}${line(state.root, 0)})\n`;
}

// ---- Go ----

// GTP's column letters: no I.
const GO_COLUMNS = 'ABCDEFGHJKLMNOPQRST';

function isGo(game = state.game) { return game.startsWith('go'); }
function goSize() { return parseInt(state.game.slice(2), 10); }
function goVertex(point, size) { return GO_COLUMNS[point % size] + (Math.floor(point / size) + 1); }
function goPoint(vertex, size) { return (parseInt(vertex.slice(1), 10) - 1) * size + GO_COLUMNS.indexOf(vertex[0].toUpperCase()); }

// Each point's stone, `X` black, `O` white or null, in point order (row * size + column from A1).
function goStones(fen, size) {
  const stones = new Array(size * size).fill(null);
  fen.split(' ')[0].split('/').forEach((row, r) => {
    let column = 0;
    for (const token of row.match(/\d+|[XO]/g) || []) {
      if (/\d/.test(token)) column += parseInt(token, 10);
      else stones[(size - 1 - r) * size + column++] = token;
    }
  });
  return stones;
}

function starPoints(size) {
  const lines = size === 9 ? [2, 6] : size === 13 ? [3, 9] : [3, 9, 15];
  const points = lines.flatMap((row) => lines.map((column) => row * size + column));
  const middle = (size - 1) / 2;
  if (size % 2 === 1 && !points.includes(middle * size + middle)) points.push(middle * size + middle);
  return points;
}

// A point's centre on the board: one square of margin for the coordinates.
function goXY(point, size) { return [(point % size + 1) * SQUARE, (size - Math.floor(point / size)) * SQUARE]; }

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attributes)) element.setAttribute(k, v);
  if (text !== undefined) element.textContent = text;
  return element;
}

function renderGoBoard(view) {
  const size = view.files;
  const svg = $('board');
  const extent = (size + 1) * SQUARE;
  svg.setAttribute('viewBox', `0 0 ${extent} ${extent}`);
  svg.innerHTML = '';
  svg.appendChild(svgElement('rect', { class: 'goban', x: 0, y: 0, width: extent, height: extent }));
  for (let i = 0; i < size; i++) {
    const at = (i + 1) * SQUARE;
    svg.appendChild(svgElement('line', { class: 'grid', x1: SQUARE, y1: at, x2: size * SQUARE, y2: at }));
    svg.appendChild(svgElement('line', { class: 'grid', x1: at, y1: SQUARE, x2: at, y2: size * SQUARE }));
    for (const y of [SQUARE * 0.45, (size + 0.75) * SQUARE]) svg.appendChild(svgElement('text', { class: 'go-coord', x: at, y }, GO_COLUMNS[i]));
    for (const x of [SQUARE * 0.45, (size + 0.55) * SQUARE]) svg.appendChild(svgElement('text', { class: 'go-coord', x, y: (size - i) * SQUARE + 12 }, i + 1));
  }
  for (const p of starPoints(size)) {
    const [x, y] = goXY(p, size);
    svg.appendChild(svgElement('circle', { class: 'star', cx: x, cy: y, r: SQUARE * 0.09 }));
  }
  // A target per point: what a click lands on (and what tests click).
  for (let p = 0; p < size * size; p++) {
    const [x, y] = goXY(p, size);
    svg.appendChild(svgElement('rect', { class: 'point', x: x - SQUARE / 2, y: y - SQUARE / 2, width: SQUARE, height: SQUARE, 'data-point': goVertex(p, size) }));
  }
  const snapshot = state.snapshot && state.snapshot.fen === view.fen ? state.snapshot : null;
  if (snapshot && snapshot.ownership && $('show-ownership').checked) {
    // The network's ownership is the side to move's; the map shows black's.
    const sign = view.turn === 'b' ? 1 : -1;
    snapshot.ownership.forEach((value, p) => {
      const black = sign * value;
      const [x, y] = goXY(p, size);
      const half = SQUARE * 0.3;
      svg.appendChild(svgElement('rect', {
        class: 'owner', x: x - half, y: y - half, width: 2 * half, height: 2 * half,
        fill: black > 0 ? '#000' : '#fff', 'fill-opacity': Math.min(1, Math.abs(black)) * 0.75, 'data-point': goVertex(p, size),
      }));
    });
  }
  const stones = goStones(view.fen, size);
  stones.forEach((stone, p) => {
    if (!stone) return;
    const [x, y] = goXY(p, size);
    svg.appendChild(svgElement('circle', { class: `stone ${stone === 'X' ? 'black' : 'white'}`, cx: x, cy: y, r: SQUARE * 0.47, 'data-point': goVertex(p, size) }));
  });
  const last = state.node.uci;
  if (last && last !== 'pass') {
    const p = goPoint(last, size);
    const [x, y] = goXY(p, size);
    svg.appendChild(svgElement('circle', { class: 'last-stone', cx: x, cy: y, r: SQUARE * 0.18, stroke: stones[p] === 'X' ? '#fff' : '#000' }));
  }
  if (snapshot && !state.pv) {
    const total = snapshot.moves.reduce((sum, m) => sum + m.n, 0) || 1;
    snapshot.moves.filter((m) => m.n > 0 && m.uci !== 'pass').slice(0, 10).forEach((m, i) => {
      const [x, y] = goXY(goPoint(m.uci, size), size);
      const g = svgElement('g', { class: 'candidate', 'data-move': m.uci });
      g.appendChild(svgElement('circle', { cx: x, cy: y, r: SQUARE * 0.45, fill: i === 0 ? 'rgba(21,160,60,0.85)' : `rgba(47,111,191,${0.35 + 0.6 * m.n / total})` }));
      g.appendChild(svgElement('text', { x, y: y - 4 }, `${(50 * (1 + m.q)).toFixed(0)}`));
      g.appendChild(svgElement('text', { x, y: y + 26, class: 'small' }, m.score_lead == null ? m.n : `${m.score_lead >= 0 ? '+' : ''}${m.score_lead.toFixed(1)}`));
      g.onmouseenter = () => showPv(m);
      g.onmouseleave = () => showPv(null);
      svg.appendChild(g);
    });
  }
  if (state.pv) {
    // The hovered move's principal variation, numbered, as translucent stones.
    let black = view.turn === 'b';
    state.pv.forEach((vertex, i) => {
      if (vertex !== 'pass') {
        const [x, y] = goXY(goPoint(vertex, size), size);
        svg.appendChild(svgElement('circle', { class: `stone pv ${black ? 'black' : 'white'}`, cx: x, cy: y, r: SQUARE * 0.47, 'data-pv': i + 1 }));
        svg.appendChild(svgElement('text', { class: `pv-number ${black ? 'on-black' : 'on-white'}`, x, y: y + 12 }, i + 1));
      }
      black = !black;
    });
  }
}

function showPv(m) {
  if (!isGo()) return;
  state.pv = m && m.pv_uci.length ? m.pv_uci : m ? [m.uci] : null;
  renderGoBoard(state.node.view);
}

// A Go score lead for the side to move `turn`, as players write it: `B+2.5`.
function leadText(lead, turn) {
  const black = turn === 'b' ? lead : -lead;
  return `${black >= 0 ? 'B' : 'W'}+${Math.abs(black).toFixed(1)}`;
}

function goClick(event) {
  const view = state.node.view;
  const size = view.files;
  const svg = $('board');
  const point = svg.createSVGPoint();
  point.x = event.clientX; point.y = event.clientY;
  const p = point.matrixTransform(svg.getScreenCTM().inverse());
  const column = Math.round(p.x / SQUARE) - 1, row = size - Math.round(p.y / SQUARE);
  if (column < 0 || row < 0 || column >= size || row >= size) return;
  const vertex = goVertex(row * size + column, size);
  if (view.legal.some((m) => m.uci === vertex)) playMove(vertex);
}

// ---- the dashboard ----

let dashboardTimer = null;

function flatten(value, prefix, out) {
  if (typeof value === 'number' && isFinite(value)) out[prefix] = value;
  else if (Array.isArray(value)) {
    const names = prefix.endsWith('white_draw_black') ? ['white', 'draw', 'black'] : null;
    value.forEach((v, i) => flatten(v, `${prefix}.${names ? names[i] : i}`, out));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  }
  return out;
}

async function refreshDashboard() {
  if (!state.info.run) { $('run-location').textContent = 'no run: start capa gui with --run DIR'; return; }
  let metrics;
  try { metrics = await api('/api/run/metrics'); } catch (e) { showError(e.message); return; }
  $('run-location').textContent = metrics.location;
  $('run-updated').textContent = `${metrics.lines.length} iterations, updated ${new Date().toLocaleTimeString()}`;
  const rows = metrics.lines.map((line) => flatten(line, '', {}));
  let hours = 0;
  for (const row of rows) {
    hours += ((row.seconds_selfplay || 0) + (row.seconds_train || 0) + (row.seconds_checkpoint || 0)) / 3600;
    row.hours = hours;
  }
  // Strength and losses first, then self-play, then the rest.
  const rank = (k) => (/^(eval|curriculum)\./.test(k) ? 0 : k.startsWith('train.') ? 1 : k.startsWith('selfplay') ? 2 : 3);
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))]
    .filter((k) => !['iteration', 'hours'].includes(k) && !/_(low|high)$/.test(k))
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const xKey = $('x-axis').value;
  const charts = $('charts');
  charts.innerHTML = '';
  for (const key of keys) charts.appendChild(chart(key, rows, xKey));
  try {
    const games = await api('/api/run/games');
    const body = $('run-games').tBodies[0];
    body.innerHTML = '';
    for (const g of games.games) {
      const row = body.insertRow();
      row.dataset.key = g.key;
      for (const text of [g.key, g.network, g.result, g.plies, g.ending]) row.insertCell().textContent = text;
      row.onclick = () => openGame(api(`/api/run/game?${query({ key: g.key })}`), 0);
    }
  } catch (e) { showError(e.message); }
}

function chart(key, rows, xKey) {
  const points = rows.filter((r) => r[key] !== undefined && r[xKey] !== undefined).map((r) => [r[xKey], r[key], r[`${key}_low`], r[`${key}_high`]]);
  const div = document.createElement('div');
  div.className = 'chart';
  div.dataset.metric = key;
  const last = points.length ? points[points.length - 1][1] : null;
  div.innerHTML = `<h3>${key}${last == null ? '' : ` <b>${Number(last.toPrecision(4))}</b>`}</h3>`;
  const w = 320, h = 150, left = 42, bottom = 16;
  const xs = points.map((p) => p[0]);
  const ys = points.flatMap((p) => [p[1], p[2], p[3]]).filter((v) => v !== undefined);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (!(x1 > x0)) { x0 -= 1; x1 += 1; }
  if (!(y1 > y0)) { y0 -= 1; y1 += 1; }
  const X = (x) => left + (w - left - 4) * (x - x0) / (x1 - x0);
  const Y = (y) => 4 + (h - bottom - 8) * (1 - (y - y0) / (y1 - y0));
  let svg = `<svg viewBox="0 0 ${w} ${h}" preserveAspectRatio="none"><line class="axis" x1="${left}" y1="${h - bottom}" x2="${w}" y2="${h - bottom}"/><line class="axis" x1="${left}" y1="0" x2="${left}" y2="${h - bottom}"/>`;
  svg += `<text x="2" y="12">${Number(y1.toPrecision(3))}</text><text x="2" y="${h - bottom}">${Number(y0.toPrecision(3))}</text>`;
  svg += `<text x="${left}" y="${h - 3}">${Number(x0.toPrecision(3))}</text><text x="${w - 40}" y="${h - 3}">${Number(x1.toPrecision(3))}</text>`;
  const banded = points.filter((p) => p[2] !== undefined && p[3] !== undefined);
  if (banded.length) {
    const upper = banded.map((p) => `${X(p[0])},${Y(p[3])}`);
    const lower = banded.map((p) => `${X(p[0])},${Y(p[2])}`).reverse();
    svg += `<polygon class="band" points="${upper.concat(lower).join(' ')}"/>`;
  }
  if (points.length === 1) svg += `<circle cx="${X(points[0][0])}" cy="${Y(points[0][1])}" r="3" fill="#2f6fbf"/>`;
  svg += `<polyline class="line" points="${points.map((p) => `${X(p[0])},${Y(p[1])}`).join(' ')}"/></svg>`;
  div.innerHTML += svg;
  return div;
}

function showTab(tab) {
  for (const button of document.querySelectorAll('.tab')) button.classList.toggle('active', button.dataset.tab === tab);
  $('board-page').hidden = tab !== 'board';
  $('dashboard-page').hidden = tab !== 'dashboard';
  clearInterval(dashboardTimer);
  if (tab === 'dashboard') { refreshDashboard(); dashboardTimer = setInterval(refreshDashboard, 5000); }
}

// ---- start ----

async function newGame(game, fen) {
  stopAnalysis();
  state.snapshot = null;
  const node = resetGame(game, fen, []);
  await goTo(node);
}

// What the controls say and show for the board's game.
function showGameControls() {
  const go = isGo();
  $('pass').hidden = !go;
  $('flip').hidden = go;
  $('ownership-label').hidden = !go;
  $('copy-pgn').textContent = go ? 'Copy SGF' : 'Copy PGN';
  const head = $('analysis-table').tHead.rows[0].cells;
  head[3].textContent = go ? 'Win' : 'Q';
  head[4].textContent = go ? 'Lead' : 'D';
  head[5].textContent = go ? 'W/L' : 'W/D/L';
}

async function init() {
  try { state.info = await api('/api/info'); } catch (e) { showError(`cannot reach the server: ${e.message}`); return; }
  const info = state.info;
  $('status').textContent = [
    info.network ? `network ${info.network.name} (${info.network.game})` : 'no network',
    ...info.explorers.map((e) => `${e.games} ${e.game} games`),
    info.run ? `run ${info.run.location}` : '',
  ].filter(Boolean).join(' · ');
  $('cpuct').value = info.defaults.cpuct.toFixed(3); $('cpuct-value').textContent = info.defaults.cpuct.toFixed(3);
  for (const game of ['capablanca', 'chess', 'go9', 'go13', 'go19']) START_FENS[game] = (await api(`/api/position?game=${game}`)).fen;
  for (const button of document.querySelectorAll('.tab')) button.onclick = () => showTab(button.dataset.tab);
  const board = $('board');
  board.addEventListener('pointerdown', onPointerDown);
  board.addEventListener('pointerup', onPointerUp);
  $('first').onclick = () => goTo(state.root);
  $('back').onclick = () => state.node.parent && goTo(state.node.parent);
  $('forward').onclick = () => state.node.children[0] && goTo(state.node.children[0]);
  $('last').onclick = () => { let n = state.node; while (n.children[0]) n = n.children[0]; goTo(n); };
  $('takeback').onclick = () => {
    const node = state.node;
    if (!node.parent) return;
    node.parent.children = node.parent.children.filter((c) => c !== node);
    goTo(node.parent);
  };
  $('flip').onclick = () => { state.flipped = !state.flipped; render(); };
  $('new-game').onclick = () => newGame(state.game, '');
  $('game-select').onchange = () => newGame($('game-select').value, '');
  $('load-fen').onclick = async () => {
    const fen = $('fen').value.trim();
    try {
      const view = await api(`/api/position?${query({ game: state.game, fen })}`);
      await newGame(state.game, view.fen === START_FENS[state.game] ? '' : view.fen);
    } catch (e) { showError(e.message); }
  };
  $('copy-fen').onclick = () => navigator.clipboard?.writeText(state.node.view.fen);
  $('load-pgn').onclick = () => loadGameText($('pgn').value);
  $('open-file').onchange = async () => {
    const file = $('open-file').files[0];
    if (file) await loadGameText(await file.text());
    $('open-file').value = '';
  };
  $('copy-pgn').onclick = () => { const text = gameText(); $('pgn').value = text; navigator.clipboard?.writeText(text); };
  $('save-game').onclick = () => {
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([gameText()], { type: 'text/plain' }));
    link.download = isGo() ? 'capa.sgf' : 'capa.pgn';
    link.click();
    URL.revokeObjectURL(link.href);
  };
  $('pass').onclick = () => playMove('pass');
  $('show-ownership').onchange = () => renderBoard(state.node.view);
  $('analyse').onclick = () => setAnalysing(!state.analysing);
  for (const id of ['cpuct', 'contempt']) {
    $(id).oninput = () => { $(`${id}-value`).textContent = $(id).value; };
    $(id).onchange = () => { if (state.analysing) startAnalysis(); };
  }
  $('multipv').onchange = () => { if (state.analysing) startAnalysis(); };
  $('play-side').onchange = () => maybeNetworkMove();
  $('play-now').onclick = () => maybeNetworkMove(true);
  $('x-axis').onchange = refreshDashboard;
  document.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT' || e.target.tagName === 'TEXTAREA') return;
    if (e.key === 'ArrowLeft') $('back').click();
    if (e.key === 'ArrowRight') $('forward').click();
    if (e.key === 'Home') $('first').click();
    if (e.key === 'End') $('last').click();
  });
  window.addEventListener('pagehide', stopAnalysis);
  await newGame(info.game, '');
  document.body.dataset.ready = 'true';
}

init();
