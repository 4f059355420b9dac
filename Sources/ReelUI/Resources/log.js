/*
 * reel ui — the virtual action log: only the visible rows are in the DOM (their elements pooled
 * and reused), the envelopes are fetched a page at a time and cached, and the filters turn the
 * log into the list of matching seqs (/api/search) it then virtualizes over. Besides the typed
 * filters, the log can be filtered by a node of the state tree (S.changed: only the actions that
 * changed the value there, the store's `history` with `changed`), shown as a removable chip.
 */

import { $, el, debounce, clamp, fmtInt, plural, compactJSON, shortTime } from './util.js';
import { api, reportError } from './api.js';
import { S, rowCount, seqAt, lowerIndex } from './state.js';
import { onLatest } from './travel.js';

const ROW_H = 28;                   // px; must equal --row-h in app.css
const OVERSCAN = 8;                 // rows rendered above and below the viewport
const PREFETCH = 40;                // rows fetched beyond the rendered ones
const PAGE = 200;                   // rows per /api/history request (unfiltered log)
const MAX_SEQS_PER_REQUEST = 1000;  // the API's limit for /api/actions
// Browsers cap an element's height (~33M px in Chrome, less in Firefox): past this, the spacer
// is scaled and scrollTop maps to a row index proportionally.
const MAX_SPACER_PX = 15000000;
const CACHE_MAX = 20000;            // envelopes kept; beyond, the farthest ones are dropped
const CACHE_KEEP = 15000;           // ... down to this many, so eviction is not run every page
const FETCH_DEBOUNCE_MS = 60;
const FILTER_DEBOUNCE_MS = 250;

const filterType = $('filter-type');
const filterPeer = $('filter-peer');
const filterText = $('filter-text');
const logCount = $('log-count');
const logEl = $('log');
const spacerEl = $('log-spacer');
const rowsEl = $('log-rows');
const logEmpty = $('log-empty');
const logPane = $('log-pane');
const logHead = $('log-head');
const logChips = $('log-chips');

const rowEls = new Map();          // seq -> the row element currently in the DOM
// Rows scrolled out of sight, kept for reuse: a fast fling replaces dozens of rows a frame,
// and refilling an element is cheaper than building one (measured with Tools/ui-bench).
const rowPool = [];
const pagesInFlight = new Set();   // history pages being fetched
const seqsInFlight = new Set();    // filtered seqs being fetched
let renderQueued = false;

// --- Column widths ---
// Each row is a grid of its own (the log is virtual), so no column can size itself to the
// longest text it holds: every column but the payload's is set, in px, as wide as its header
// and the longest text it has shown, and the payload takes the rest. Widths only grow, so
// scrolling never makes the columns jump back and forth.

const colWidth = new Map();         // column name -> px
const colFont = new Map();          // column name -> CSS font of its cells, read once
// What was measured: each type once, and seqs, times and uids once per length (they are digits
// and clock times in a monospace font), so a fling through the log measures next to nothing.
const measured = new Set();
const measurer = document.createElement('canvas').getContext('2d');

function setColWidth(name, px) {
  if (!(px > (colWidth.get(name) || 0))) return;
  colWidth.set(name, px);
  logPane.style.setProperty(`--w-${name}`, `${px}px`);
}

/** Widens column `name` to fit `text`, shown in `cell` (in the page, for its font). */
function fitText(name, cell, text) {
  const key = `${name}:${name === 'type' ? text : text.length}`;
  if (!text || measured.has(key)) return;
  measured.add(key);
  if (!colFont.has(name)) {
    const style = getComputedStyle(cell); // longhands: not every browser serializes `font`
    colFont.set(name, `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`);
  }
  measurer.font = colFont.get(name);
  setColWidth(name, Math.ceil(measurer.measureText(text).width) + 2);
}

const headersFitted = new Set();
const HEADERS_TO_FIT = logHead.querySelectorAll('[data-col]').length;

/** Each header's text: its column is never narrower (scrollWidth counts what overflows). A
 *  hidden header (the uid's, in a narrow log) is measured once it shows. */
function fitHeaders() {
  for (const head of logHead.children) {
    const name = head.dataset.col;
    if (!name || headersFitted.has(name) || !head.offsetParent) continue;
    headersFitted.add(name);
    setColWidth(name, head.scrollWidth + 1);
  }
}

/** The spacer's height and the virtual-pixels-per-scroll-pixel ratio (1 unless scaled). */
function geometry() {
  const total = rowCount() * ROW_H;
  const viewH = logEl.clientHeight;
  if (total <= MAX_SPACER_PX || viewH >= MAX_SPACER_PX) return { total, spacerH: total, ratio: 1, viewH };
  return { total, spacerH: MAX_SPACER_PX, ratio: (total - viewH) / (MAX_SPACER_PX - viewH), viewH };
}

/** Rows [first, last] covering the viewport plus `extra` rows each side, and the virtual top. */
function visibleRange(extra) {
  const g = geometry();
  const vTop = logEl.scrollTop * g.ratio;
  const first = Math.max(0, Math.floor(vTop / ROW_H) - extra);
  const last = Math.min(rowCount() - 1, Math.ceil((vTop + g.viewH) / ROW_H) + extra);
  return { first, last, vTop };
}

/** Keeps the spacer's height in step with the row count (synchronously: scrolling to a row
 *  right after the count grew needs the new height, or scrollTop would be clamped). */
function syncSpacer() {
  const height = `${geometry().spacerH}px`;
  if (spacerEl.style.height !== height) spacerEl.style.height = height;
}

function updateCount() {
  logCount.textContent = S.view
    ? `${fmtInt(S.view.length)} of ${fmtInt(S.latest - S.origin)}`
    : plural(S.latest - S.origin, 'action');
}

/** After the history shown changed (a branch picked): the rows, the cache and the fetches under
 *  way are another history's. */
export function resetLog() {
  S.cache.clear();
  pagesInFlight.clear();
  seqsInFlight.clear();
  resetRows();
  updateLog();
}

/** After the row count changed: spacer, count, empty message, render, fetch. */
export function updateLog() {
  syncSpacer();
  updateCount();
  logEmpty.hidden = rowCount() > 0;
  logEmpty.textContent = !S.view ? 'No action yet.'
    : S.changed !== null && !typedFiltersActive() ? `No action changed ${pointerText(S.changed)}.`
      : 'No action matches the filters.';
  scheduleRender();
  scheduleFetch();
}

export function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(renderLog);
}

/** Renders only the visible rows (plus overscan), reusing the elements of rows that stay
 *  visible so they keep their identity (and a ticked checkbox its focus). */
function renderLog() {
  renderQueued = false;
  if (headersFitted.size < HEADERS_TO_FIT) fitHeaders();
  syncSpacer();
  const { first, last, vTop } = visibleRange(OVERSCAN);
  const scrollTop = logEl.scrollTop;
  const wanted = new Set();
  for (let i = first; i <= last; i++) wanted.add(seqAt(i));
  for (const [seq, row] of rowEls) {
    if (!wanted.has(seq)) { row.remove(); rowEls.delete(seq); rowPool.push(row); }
  }
  // Place rows in index order so the DOM order matches what is seen.
  let cursor = rowsEl.firstChild;
  for (let i = first; i <= last; i++) {
    const seq = seqAt(i);
    let row = rowEls.get(seq);
    if (!row) { row = createRow(seq); rowEls.set(seq, row); }
    // Position in the spacer's coordinates; when scaled, relative to the real scrollTop.
    row.style.top = `${scrollTop + i * ROW_H - vTop}px`;
    if (row === cursor) cursor = cursor.nextSibling;
    else rowsEl.insertBefore(row, cursor);
    decorateRow(row, seq); // once in the page: filling it measures its text in the cells' font
  }
  updateActiveDescendant();
}

function createRow(seq) {
  const reused = rowPool.pop();
  if (reused) {
    reused.className = 'log-row loading';
    reused.dataset.seq = String(seq);
    reused.id = `row-${seq}`;
    reused.title = '';
    const [box, seqEl, typeEl, payloadEl, timeEl, peerEl] = reused.children;
    box.setAttribute('aria-label', `What-if: skip seq ${seq}`);
    seqEl.textContent = String(seq);
    typeEl.textContent = payloadEl.textContent = timeEl.textContent = peerEl.textContent = '';
    return reused;
  }
  const row = el('div', 'log-row loading');
  row.dataset.seq = String(seq);
  row.id = `row-${seq}`;
  row.setAttribute('role', 'option');
  const box = el('input', 'whatif-toggle');
  box.type = 'checkbox';
  box.tabIndex = -1; // the log itself is the tab stop; Space toggles the selected row
  box.title = 'What-if: replay without this action';
  box.setAttribute('aria-label', `What-if: skip seq ${seq}`);
  row.append(box, el('span', 'c-seq', seq), el('span', 'c-type'), el('span', 'c-payload'),
    el('span', 'c-time'), el('span', 'c-peer'));
  return row;
}

function fillRow(row, env) {
  const [, seqEl, typeEl, payloadEl, timeEl, peerEl] = row.children;
  const peer = env.peer && typeof env.peer === 'object' ? env.peer : null;
  typeEl.textContent = env.type === undefined ? '' : String(env.type);
  payloadEl.textContent = compactJSON(env.payload, 160);
  timeEl.textContent = shortTime(env.time);
  timeEl.title = env.time ? `${env.time} (UTC)` : '';
  peerEl.textContent = peer && peer.uid !== undefined ? String(peer.uid) : '';
  fitText('seq', seqEl, seqEl.textContent);
  fitText('type', typeEl, typeEl.textContent);
  fitText('time', timeEl, timeEl.textContent);
  fitText('uid', peerEl, peerEl.textContent);
  row.title = `seq ${env.seq} · ${env.type} · ${env.time || ''}` +
    (peer ? ` · uid ${peer.uid} gid ${peer.gid} pid ${peer.pid}` : '');
  row.classList.remove('loading');
  row.classList.toggle('store-action', typeof env.type === 'string' && env.type.startsWith('@'));
}

/** Selection, marks and skips, re-applied on every render (they live in S, not the DOM). */
function decorateRow(row, seq) {
  const selected = seq === S.current;
  const skipped = S.skipped.has(seq);
  row.classList.toggle('selected', selected);
  row.setAttribute('aria-selected', String(selected));
  row.classList.toggle('skipped', skipped);
  row.classList.toggle('mark-a', seq === S.markA);
  row.classList.toggle('mark-b', seq === S.markB);
  const box = row.firstChild;
  if (box.checked !== skipped) box.checked = skipped;
  if (row.classList.contains('loading')) {
    const env = S.cache.get(seq);
    if (env) fillRow(row, env);
  }
}

export function refreshRows() {
  for (const [seq, row] of rowEls) decorateRow(row, seq);
  updateActiveDescendant();
}

function updateActiveDescendant() {
  if (rowEls.has(S.current)) logEl.setAttribute('aria-activedescendant', `row-${S.current}`);
  else logEl.removeAttribute('aria-activedescendant');
}

function resetRows() {
  for (const row of rowEls.values()) { row.remove(); rowPool.push(row); }
  rowEls.clear();
}

/** Scrolls as little as needed to show row `index`. */
function scrollToIndex(index) {
  const n = rowCount();
  if (n === 0) return;
  index = clamp(index, 0, n - 1);
  const g = geometry();
  const vTop = logEl.scrollTop * g.ratio;
  const rowTop = index * ROW_H;
  let target;
  if (rowTop < vTop) target = rowTop;
  else if (rowTop + ROW_H > vTop + g.viewH) target = rowTop + ROW_H - g.viewH;
  else return;
  logEl.scrollTop = target / g.ratio;
  scheduleRender();
  scheduleFetch();
}

export function scrollToSeq(seq) {
  scrollToIndex(lowerIndex(seq));
}

export function scrollToEnd() {
  syncSpacer();
  logEl.scrollTop = logEl.scrollHeight;
  scheduleRender();
  scheduleFetch();
}

// --- Fetching rows: debounced, only what is (nearly) visible, never twice at once ---

export const scheduleFetch = debounce(fetchVisible, FETCH_DEBOUNCE_MS, 300);

function fetchVisible() {
  if (rowCount() === 0) return;
  const { first, last } = visibleRange(OVERSCAN + PREFETCH);
  if (!S.view) {
    const pages = new Set();
    for (let i = first; i <= last; i++) {
      if (!S.cache.has(seqAt(i))) pages.add(Math.floor(i / PAGE));
    }
    for (const page of pages) {
      if (!pagesInFlight.has(page)) void fetchPage(page);
    }
  } else {
    const missing = [];
    for (let i = first; i <= last && missing.length < MAX_SEQS_PER_REQUEST; i++) {
      const seq = S.view[i];
      if (!S.cache.has(seq) && !seqsInFlight.has(seq)) missing.push(seq);
    }
    if (missing.length) void fetchSeqs(missing);
  }
}

async function fetchPage(page) {
  pagesInFlight.add(page);
  const from = S.origin + page * PAGE + 1;
  const to = Math.max(from, Math.min(S.latest, from + PAGE - 1));
  const branch = S.branch;
  try {
    const data = await api('/api/history', { from, to, limit: PAGE });
    if (S.branch !== branch) return; // another history is shown now
    storeActions(data.actions);
    if (Number.isFinite(data.latest)) onLatest(data.latest);
  } catch (err) {
    reportError('loading the log', err);
  } finally {
    pagesInFlight.delete(page);
  }
}

async function fetchSeqs(seqs) {
  for (const seq of seqs) seqsInFlight.add(seq);
  const branch = S.branch;
  try {
    const data = await api('/api/actions', { seqs: seqs.join(',') });
    if (S.branch !== branch) return;
    storeActions(data.actions);
  } catch (err) {
    reportError('loading the log', err);
  } finally {
    for (const seq of seqs) seqsInFlight.delete(seq);
  }
}

/** Caches envelopes and fills the rows waiting for them (no new fetch from here: a short
 *  answer must not turn into a request loop). */
function storeActions(actions) {
  if (!Array.isArray(actions)) return;
  for (const env of actions) {
    if (env && typeof env === 'object' && Number.isFinite(env.seq)) S.cache.set(env.seq, env);
  }
  evictCache();
  refreshRows();
}

/** Drops the envelopes farthest from what is on screen once the cache is over its budget. */
function evictCache() {
  if (S.cache.size <= CACHE_MAX) return;
  const n = rowCount();
  const { first, last } = visibleRange(0);
  const center = n ? seqAt(clamp((first + last) >> 1, 0, n - 1)) : 0;
  const seqs = Array.from(S.cache.keys());
  seqs.sort((a, b) => Math.abs(b - center) - Math.abs(a - center));
  for (let i = 0; i < seqs.length - CACHE_KEEP; i++) S.cache.delete(seqs[i]);
}

// --- Filters: /api/search gives the matching seqs; the log then virtualizes over them ---

let searchReq = 0;
// maxWait: a busy live store re-runs the search for new matches every few seconds, not never.
export const scheduleSearch = debounce(() => { void runSearch(); }, FILTER_DEBOUNCE_MS, 3000);

function filterParams() {
  const params = {
    type: filterType.value.trim(),
    peer: filterPeer.value.trim(),
    text: filterText.value, // a substring: spaces may matter
  };
  if (S.changed !== null) params.changed = S.changed;
  return params;
}

function typedFiltersActive() {
  const f = filterParams();
  return Boolean(f.type || f.peer || f.text);
}

export function filtersActive() {
  return S.changed !== null || typedFiltersActive();
}

/** A pointer as the page writes it: the whole state's is "(root)". */
const pointerText = (pointer) => (pointer === '' ? '(root)' : pointer);

/**
 * Filters the log to the actions that changed the value at `pointer` (null: no such filter),
 * with the typed filters if any; the chip above the log shows it, and its × removes it.
 */
export function setChangedFilter(pointer) {
  const changed = typeof pointer === 'string' ? pointer : null;
  if (changed === S.changed) return;
  S.changed = changed;
  renderChip();
  scheduleSearch.cancel();
  void runSearch();
}

function renderChip() {
  logChips.textContent = '';
  logChips.hidden = S.changed === null;
  if (S.changed === null) return;
  const shown = pointerText(S.changed);
  const chip = el('span', 'filter-chip');
  chip.id = 'changed-chip';
  chip.dataset.pointer = S.changed;
  chip.title = `Only the actions that changed the value at ${shown}`;
  chip.append(el('span', 'chip-label', 'changed'), el('code', 'chip-value', shown));
  const remove = el('button', 'chip-remove', '×');
  remove.type = 'button';
  remove.id = 'changed-chip-remove';
  remove.title = 'Remove this filter: the whole log';
  remove.setAttribute('aria-label', `Remove the filter: changed ${shown}`);
  chip.appendChild(remove);
  logChips.appendChild(chip);
}

async function runSearch() {
  const id = ++searchReq;
  if (!filtersActive()) {
    if (S.view) { S.view = null; afterViewChange(''); }
    return;
  }
  const params = filterParams();
  try {
    const data = await api('/api/search', params);
    if (id !== searchReq) return; // the filters changed meanwhile
    S.view = Array.isArray(data.seqs) ? data.seqs.filter(Number.isFinite) : [];
    afterViewChange(JSON.stringify(params));
    if (Number.isFinite(data.latest)) onLatest(data.latest);
  } catch (err) {
    if (id === searchReq) reportError('search', err);
  }
}

/** The rows now stand for other seqs: rebuild them, keeping the current seq in sight. The log
 *  says which filters its rows are for (data-filters: their JSON, empty for the whole log). */
function afterViewChange(filters) {
  logEl.dataset.filters = filters;
  resetRows();
  updateLog();
  logEl.scrollTop = 0;
  scrollToIndex(lowerIndex(S.current));
}
