/*
 * reel ui — the browser side of Reel's visual time-travel debugger.
 *
 * One classic script, no dependencies (the page must work offline and the server's CSP allows
 * only this origin's files). It talks to the JSON API described in docs (GET /api/info, /api/history,
 * /api/search, /api/actions, /api/state, /api/show, /api/diff; POST /api/whatif, /api/bisect,
 * /api/dispatch, /api/revert; GET /api/export; WS /api/live).
 *
 * Layout of this file:
 *   1. constants and small helpers      6. action panel and patches
 *   2. API access and the status line   7. marks and their diff
 *   3. theme                            8. what-if, bisect, dispatch/revert, export
 *   4. the virtual action log           9. live updates (WebSocket)
 *   5. time travel and the state tree  10. keyboard, wiring, start-up
 */
'use strict';

(() => {
  // ---------------------------------------------------------------------------------------------
  // 1. Constants and helpers
  // ---------------------------------------------------------------------------------------------

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
  const TRAVEL_DEBOUNCE_MS = 50;
  const FILTER_DEBOUNCE_MS = 250;
  const WHATIF_DEBOUNCE_MS = 200;
  const TREE_CHUNK = 100;             // children rendered per expansion step
  const PATCH_DISPLAY_MAX = 2000;     // ops rendered; data-patch always holds all of them
  const THEME_KEY = 'reel-ui-theme';
  const TOKEN = new URLSearchParams(location.search).get('token') || '';

  const $ = (id) => document.getElementById(id);

  const sourceEl = $('source');
  const reducerEl = $('reducer');
  const badgeEl = $('mode-badge');
  const themeBtn = $('theme-toggle');
  const filterType = $('filter-type');
  const filterPeer = $('filter-peer');
  const filterText = $('filter-text');
  const logCount = $('log-count');
  const followBox = $('follow');
  const logEl = $('log');
  const spacerEl = $('log-spacer');
  const rowsEl = $('log-rows');
  const logEmpty = $('log-empty');
  const slider = $('slider');
  const stepFirst = $('step-first');
  const stepBack = $('step-back');
  const stepForward = $('step-forward');
  const stepLast = $('step-last');
  const seqInput = $('seq-input');
  const seqDisplay = $('seq-display');
  const seqLatest = $('seq-latest');
  const revertButton = $('revert-button');
  const stateNote = $('state-note');
  const pointerInput = $('pointer-input');
  const pointerError = $('pointer-error');
  const stateTree = $('state-tree');
  const actionDiff = $('action-diff');
  const actionDetail = $('action-detail');
  const actionPatch = $('action-patch');
  const markALabel = $('mark-a-label');
  const markBLabel = $('mark-b-label');
  const clearMarksBtn = $('clear-marks');
  const markDiff = $('mark-diff');
  const whatifSkipped = $('whatif-skipped');
  const whatifNone = $('whatif-none');
  const whatifClear = $('whatif-clear');
  const whatifAt = $('whatif-at');
  const whatifRefused = $('whatif-refused');
  const whatifDiff = $('whatif-diff');
  const whatifTree = $('whatif-tree');
  const bisectForm = $('bisect-form');
  const bisectInput = $('bisect-input');
  const bisectResult = $('bisect-result');
  const dispatchSection = $('dispatch');
  const dispatchForm = $('dispatch-form');
  const dispatchType = $('dispatch-type');
  const dispatchPayload = $('dispatch-payload');
  const dispatchResult = $('dispatch-result');
  const exportFrom = $('export-from');
  const exportTo = $('export-to');
  const exportButton = $('export-button');
  const statusEl = $('status');
  const revertDialog = $('revert-dialog');
  const revertSeqEl = $('revert-seq');
  const revertConfirm = $('revert-confirm');
  const revertCancel = $('revert-cancel');

  /** Creates an element with an optional class and text (text, never HTML: values are untrusted). */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  /**
   * A trailing-edge debounce with cancel(). With `maxWait`, a steady stream of calls (a slider
   * being dragged, a busy live store) still runs `fn` at least that often instead of starving it.
   */
  function debounce(fn, ms, maxWait) {
    let timer = 0;
    let firstCall = 0;
    const run = (args) => {
      firstCall = 0;
      fn(...args);
    };
    const wrapped = (...args) => {
      clearTimeout(timer);
      const now = Date.now();
      if (!firstCall) firstCall = now;
      if (maxWait && now - firstCall >= maxWait) {
        run(args);
        return;
      }
      timer = setTimeout(() => run(args), ms);
    };
    wrapped.cancel = () => {
      clearTimeout(timer);
      firstCall = 0;
    };
    return wrapped;
  }

  /** Like debounce, but a call after a quiet spell of `ms` runs at once: one step or one click
   *  on the slider shows its state without waiting, a drag still coalesces. */
  function leadingDebounce(fn, ms, maxWait) {
    let lastRun = 0;
    const trailing = debounce((...args) => { lastRun = Date.now(); fn(...args); }, ms, maxWait);
    return (...args) => {
      const now = Date.now();
      if (now - lastRun > ms) {
        trailing.cancel();
        lastRun = now;
        fn(...args);
      } else {
        trailing(...args);
      }
    };
  }

  const clamp = (n, lo, hi) => Math.min(hi, Math.max(lo, n));
  const fmtInt = (n) => Number(n).toLocaleString('en-US');
  const plural = (n, word) => `${fmtInt(n)} ${word}${n === 1 ? '' : 's'}`;
  const errMessage = (err) => (err && err.message ? err.message : String(err));

  /** Compact JSON, cut to `max` characters for previews. */
  function compactJSON(value, max) {
    let text;
    try { text = JSON.stringify(value); } catch (err) { text = String(value); }
    if (text === undefined) text = '';
    return max && text.length > max ? `${text.slice(0, max - 1)}…` : text;
  }

  function prettyJSON(value) {
    try {
      const text = JSON.stringify(value, null, 2);
      return text === undefined ? '' : text;
    } catch (err) {
      return String(value);
    }
  }

  /** HH:MM:SS of an ISO time, read from the text itself: the fraction may have 9 digits, which
   *  Date.parse does not accept everywhere, and the CLI shows UTC too. */
  function hhmmss(time) {
    const match = typeof time === 'string' ? /T(\d{2}:\d{2}:\d{2})/.exec(time) : null;
    return match ? match[1] : '';
  }

  /** A non-negative integer typed by the user, or null. */
  function parseSeq(text) {
    const trimmed = String(text).trim();
    return /^\d+$/.test(trimmed) ? Number(trimmed) : null;
  }

  // ---------------------------------------------------------------------------------------------
  // 2. API access and the status line
  // ---------------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(message, status, code) {
      super(message);
      this.name = 'ApiError';
      this.status = status;
      this.code = code;
    }
  }

  /**
   * GET `path` with `params`, or POST `body` as JSON when given. Resolves to the parsed JSON;
   * rejects with an ApiError carrying the API's own error message. The cookie set when the page
   * was loaded authenticates; the bearer token is sent too, in case the cookie was refused.
   */
  async function api(path, params, body) {
    const query = new URLSearchParams();
    if (params) {
      for (const [key, value] of Object.entries(params)) {
        if (value !== undefined && value !== null && value !== '') query.set(key, String(value));
      }
    }
    const qs = query.toString();
    const url = qs ? `${path}?${qs}` : path;
    const headers = { Accept: 'application/json' };
    if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
    const init = { headers, credentials: 'same-origin', cache: 'no-store' };
    if (body !== undefined) {
      init.method = 'POST';
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let response;
    let text;
    try {
      response = await fetch(url, init);
      text = await response.text();
    } catch (err) {
      throw new ApiError(`cannot reach reel ui (${errMessage(err)})`, 0, 0);
    }
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch (err) { data = null; }
    }
    if (!response.ok) {
      const error = data && typeof data === 'object' ? data.error : null;
      const message = error && typeof error.message === 'string'
        ? error.message
        : (text && text.length < 300 ? text.trim() : `HTTP ${response.status}`);
      throw new ApiError(message, response.status, error && error.code !== undefined ? error.code : response.status);
    }
    if (data === null || typeof data !== 'object') throw new ApiError(`unexpected answer from ${path}`, response.status, 0);
    return data;
  }

  function setStatus(message, isError) {
    statusEl.textContent = message;
    statusEl.classList.toggle('error', Boolean(isError));
  }

  /** Shows a failed request in the status line: what was being done, then the API's message. */
  function reportError(context, err) {
    setStatus(`${context}: ${errMessage(err)}`, true);
  }

  // ---------------------------------------------------------------------------------------------
  // 3. Theme: the stored choice, else the system's; data-theme on <html> drives the CSS variables
  // ---------------------------------------------------------------------------------------------

  const darkQuery = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

  function storedTheme() {
    try {
      const value = localStorage.getItem(THEME_KEY);
      return value === 'light' || value === 'dark' ? value : null;
    } catch (err) {
      return null; // storage disabled: follow the system
    }
  }

  function applyTheme(theme) {
    document.documentElement.setAttribute('data-theme', theme);
    const next = theme === 'dark' ? 'light' : 'dark';
    themeBtn.textContent = theme === 'dark' ? '☀ Light' : '☾ Dark';
    themeBtn.setAttribute('aria-label', `Switch to the ${next} theme (t)`);
  }

  function initTheme() {
    applyTheme(storedTheme() || (darkQuery && darkQuery.matches ? 'dark' : 'light'));
    if (!darkQuery) return;
    const follow = () => { if (!storedTheme()) applyTheme(darkQuery.matches ? 'dark' : 'light'); };
    if (darkQuery.addEventListener) darkQuery.addEventListener('change', follow);
    else if (darkQuery.addListener) darkQuery.addListener(follow);
  }

  function toggleTheme() {
    const next = document.documentElement.getAttribute('data-theme') === 'dark' ? 'light' : 'dark';
    try { localStorage.setItem(THEME_KEY, next); } catch (err) { /* not persisted; still applied */ }
    applyTheme(next);
  }

  // ---------------------------------------------------------------------------------------------
  // 4. The virtual action log
  // ---------------------------------------------------------------------------------------------

  /** Everything the page knows; the DOM is derived from it. */
  const S = {
    info: null,
    latest: 0,          // the latest seq
    current: 0,         // the seq being looked at (0 = the initial state)
    view: null,         // null: the whole log (row i is seq i+1); else the ascending seqs matching the filters
    cache: new Map(),   // seq -> envelope
    skipped: new Set(), // seqs skipped in the what-if replay
    markA: null,
    markB: null,
    pointer: '',        // the JSON Pointer applied to the state tree
  };

  const rowEls = new Map();          // seq -> the row element currently in the DOM
  // Rows scrolled out of sight, kept for reuse: a fast fling replaces dozens of rows a frame,
  // and refilling an element is cheaper than building one (measured with Tools/ui-bench).
  const rowPool = [];
  const pagesInFlight = new Set();   // history pages being fetched
  const seqsInFlight = new Set();    // filtered seqs being fetched
  let renderQueued = false;

  const rowCount = () => (S.view ? S.view.length : S.latest);
  const seqAt = (i) => (S.view ? S.view[i] : i + 1);

  /** Index of the first row whose seq is >= seq (rowCount() when there is none). */
  function lowerIndex(seq) {
    if (!S.view) return clamp(seq - 1, 0, S.latest);
    let lo = 0;
    let hi = S.view.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (S.view[mid] < seq) lo = mid + 1; else hi = mid;
    }
    return lo;
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
      ? `${fmtInt(S.view.length)} of ${fmtInt(S.latest)}`
      : plural(S.latest, 'action');
  }

  /** After the row count changed: spacer, count, empty message, render, fetch. */
  function updateLog() {
    syncSpacer();
    updateCount();
    logEmpty.hidden = rowCount() > 0;
    logEmpty.textContent = S.view ? 'No action matches the filters.' : 'No action yet.';
    scheduleRender();
    scheduleFetch();
  }

  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(renderLog);
  }

  /** Renders only the visible rows (plus overscan), reusing the elements of rows that stay
   *  visible so they keep their identity (and a ticked checkbox its focus). */
  function renderLog() {
    renderQueued = false;
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
      decorateRow(row, seq);
      if (row === cursor) cursor = cursor.nextSibling;
      else rowsEl.insertBefore(row, cursor);
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
    const [, , typeEl, payloadEl, timeEl, peerEl] = row.children;
    const peer = env.peer && typeof env.peer === 'object' ? env.peer : null;
    typeEl.textContent = env.type === undefined ? '' : String(env.type);
    payloadEl.textContent = compactJSON(env.payload, 160);
    timeEl.textContent = hhmmss(env.time);
    peerEl.textContent = peer && peer.uid !== undefined ? String(peer.uid) : '';
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

  function refreshRows() {
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

  function scrollToSeq(seq) {
    scrollToIndex(lowerIndex(seq));
  }

  function scrollToEnd() {
    syncSpacer();
    logEl.scrollTop = logEl.scrollHeight;
    scheduleRender();
    scheduleFetch();
  }

  // --- Fetching rows: debounced, only what is (nearly) visible, never twice at once ---

  const scheduleFetch = debounce(fetchVisible, FETCH_DEBOUNCE_MS, 300);

  function fetchVisible() {
    if (rowCount() === 0) return;
    const { first, last } = visibleRange(OVERSCAN + PREFETCH);
    if (!S.view) {
      const pages = new Set();
      for (let i = first; i <= last; i++) {
        if (!S.cache.has(i + 1)) pages.add(Math.floor(i / PAGE));
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
    const from = page * PAGE + 1;
    const to = Math.max(from, Math.min(S.latest, from + PAGE - 1));
    try {
      const data = await api('/api/history', { from, to, limit: PAGE });
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
    try {
      const data = await api('/api/actions', { seqs: seqs.join(',') });
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
  const scheduleSearch = debounce(() => { void runSearch(); }, FILTER_DEBOUNCE_MS, 3000);

  function filterParams() {
    return {
      type: filterType.value.trim(),
      peer: filterPeer.value.trim(),
      text: filterText.value, // a substring: spaces may matter
    };
  }

  function filtersActive() {
    const f = filterParams();
    return Boolean(f.type || f.peer || f.text);
  }

  async function runSearch() {
    const id = ++searchReq;
    if (!filtersActive()) {
      if (S.view) { S.view = null; afterViewChange(); }
      return;
    }
    try {
      const data = await api('/api/search', filterParams());
      if (id !== searchReq) return; // the filters changed meanwhile
      S.view = Array.isArray(data.seqs) ? data.seqs.filter(Number.isFinite) : [];
      afterViewChange();
      if (Number.isFinite(data.latest)) onLatest(data.latest);
    } catch (err) {
      if (id === searchReq) reportError('search', err);
    }
  }

  /** The rows now stand for other seqs: rebuild them, keeping the current seq in sight. */
  function afterViewChange() {
    resetRows();
    updateLog();
    logEl.scrollTop = 0;
    scrollToIndex(lowerIndex(S.current));
  }

  // ---------------------------------------------------------------------------------------------
  // 5. Time travel and the state tree
  // ---------------------------------------------------------------------------------------------

  const loadCurrentSoon = leadingDebounce(() => {
    void loadState();
    void loadShow();
    if (S.skipped.size) scheduleWhatif();
  }, TRAVEL_DEBOUNCE_MS, 250);

  /** Travels to `seq`: controls, selected row, then (debounced) the panels. */
  function setCurrent(seq, scroll = true) {
    if (!Number.isFinite(seq)) return;
    seq = clamp(Math.trunc(seq), 0, S.latest);
    S.current = seq;
    slider.value = String(seq);
    seqDisplay.textContent = String(seq);
    if (document.activeElement !== seqInput) seqInput.value = String(seq);
    updateStepButtons();
    stateNote.textContent = `at seq ${seq}`;
    if (scroll && seq > 0) scrollToSeq(seq);
    refreshRows();
    loadCurrentSoon();
  }

  function updateStepButtons() {
    stepFirst.disabled = stepBack.disabled = S.current <= 0;
    stepLast.disabled = stepForward.disabled = S.current >= S.latest;
  }

  function step(delta) {
    setCurrent(S.current + delta);
  }

  /** Up/Down in the log: the neighbouring row of the current view (filtered or not). */
  function moveSelection(dir) {
    const n = rowCount();
    if (n === 0) return;
    const i = lowerIndex(S.current);
    const onRow = i < n && seqAt(i) === S.current;
    const next = dir > 0 ? (onRow ? i + 1 : i) : i - 1;
    if (next < 0 || next >= n) return;
    setCurrent(seqAt(next));
  }

  /** Called with every latest seq learnt (info, WebSocket, history/search answers, dispatch). */
  function onLatest(seq) {
    if (!Number.isFinite(seq) || seq < 0 || seq === S.latest) return;
    const grew = seq > S.latest;
    S.latest = seq;
    applyLatest();
    if (filtersActive()) scheduleSearch(); // new actions may match
    if (grew && followBox.checked) {
      setCurrent(seq, false);
      scrollToEnd();
    } else if (S.current > seq) {
      setCurrent(seq);
    }
  }

  function applyLatest() {
    slider.max = String(S.latest);
    seqInput.max = String(S.latest);
    seqLatest.textContent = fmtInt(S.latest);
    updateStepButtons();
    if (!exportTouched) setExportDefaults();
    updateLog();
  }

  let stateReq = 0;

  /** The state (or the pointed-at part of it) at the current seq; only the newest answer shows. */
  async function loadState() {
    const id = ++stateReq;
    const seq = S.current;
    const pointer = S.pointer;
    stateTree.setAttribute('aria-busy', 'true');
    try {
      const data = await api('/api/state', { at: seq, path: pointer });
      if (id !== stateReq) return;
      const value = data.value === undefined ? null : data.value;
      pointerError.textContent = '';
      pointerError.hidden = true;
      renderTree(stateTree, value);
      stateTree.setAttribute('data-json', JSON.stringify(value));
      stateTree.setAttribute('data-seq', String(seq));
      stateNote.textContent = pointer ? `at seq ${seq}, ${pointer}` : `at seq ${seq}`;
    } catch (err) {
      if (id !== stateReq) return;
      if (pointer) {
        // Nothing at that path (404, code 1005) or a malformed pointer: say so beside the box.
        pointerError.textContent = errMessage(err);
        pointerError.hidden = false;
        stateTree.textContent = '';
        stateTree.appendChild(el('p', 'empty', `Nothing to show at ${pointer} at seq ${seq}.`));
        stateTree.removeAttribute('data-json');
        stateTree.setAttribute('data-seq', String(seq));
      } else {
        reportError(`state at seq ${seq}`, err);
      }
    } finally {
      if (id === stateReq) stateTree.removeAttribute('aria-busy');
    }
  }

  /** Renders `value` as a collapsible tree into `container`. */
  function renderTree(container, value) {
    container.textContent = '';
    const root = el('div', 'tree');
    root.setAttribute('role', 'tree');
    root.appendChild(treeNode(null, value, 0));
    container.appendChild(root);
  }

  function valueSpan(value) {
    if (value === null) return el('span', 'v-null', 'null');
    switch (typeof value) {
      case 'string': return el('span', 'v-str', JSON.stringify(value));
      case 'number': return el('span', 'v-num', String(value));
      case 'boolean': return el('span', 'v-bool', String(value));
      default: return el('span', 'v-empty', Array.isArray(value) ? '[]' : '{}');
    }
  }

  /**
   * One node. Objects and arrays get a toggle; their children are built only when first
   * expanded, TREE_CHUNK at a time, so a huge state costs nothing until it is opened. Open at
   * first: the root, and containers down to depth 2 with at most 100 children.
   */
  function treeNode(key, value, depth) {
    const node = el('div', 'tn');
    node.setAttribute('role', 'treeitem');
    const line = el('div', 'tn-line');
    node.appendChild(line);
    const isContainer = value !== null && typeof value === 'object';
    const keys = isContainer && !Array.isArray(value) ? Object.keys(value) : null;
    const count = !isContainer ? 0 : (keys ? keys.length : value.length);
    const keyEl = key === null ? null
      : el('span', typeof key === 'number' ? 'tn-key tn-index' : 'tn-key', key === '' ? '""' : key);

    if (!isContainer || count === 0) {
      line.appendChild(el('span', 'tn-pad'));
      if (keyEl) line.appendChild(keyEl);
      line.appendChild(valueSpan(value));
      return node;
    }

    const toggle = el('button', 'tn-toggle');
    toggle.type = 'button';
    line.appendChild(toggle);
    if (keyEl) line.appendChild(keyEl);
    const summary = el('span', 'tn-summary', keys ? `{…} ${plural(count, 'key')}` : `[…] ${plural(count, 'item')}`);
    line.appendChild(summary);
    const children = el('div', 'tn-children');
    children.setAttribute('role', 'group');
    node.appendChild(children);

    let built = 0;
    const buildMore = () => {
      const old = children.lastElementChild;
      if (old && old.classList.contains('tn-more')) old.remove();
      const end = Math.min(count, built + TREE_CHUNK);
      const frag = document.createDocumentFragment();
      for (let i = built; i < end; i++) {
        if (keys) frag.appendChild(treeNode(keys[i], value[keys[i]], depth + 1));
        else frag.appendChild(treeNode(i, value[i], depth + 1));
      }
      built = end;
      if (built < count) {
        const more = el('button', 'tn-more', `show ${fmtInt(Math.min(TREE_CHUNK, count - built))} more (${fmtInt(count - built)} left)`);
        more.type = 'button';
        more.addEventListener('click', buildMore);
        frag.appendChild(more);
      }
      children.appendChild(frag);
    };
    const setOpen = (open) => {
      if (open && built === 0) buildMore();
      children.hidden = !open;
      toggle.textContent = open ? '▾' : '▸';
      toggle.setAttribute('aria-expanded', String(open));
      toggle.setAttribute('aria-label', `${open ? 'Collapse' : 'Expand'} ${key === null ? 'the root' : key}`);
      node.setAttribute('aria-expanded', String(open));
    };
    const flip = () => setOpen(children.hidden);
    toggle.addEventListener('click', flip);
    summary.addEventListener('click', flip);
    if (keyEl) keyEl.addEventListener('click', flip);
    setOpen(depth === 0 || (depth <= 2 && count <= 100));
    return node;
  }

  // ---------------------------------------------------------------------------------------------
  // 6. The action at the current seq, and patches
  // ---------------------------------------------------------------------------------------------

  let showReq = 0;

  async function loadShow() {
    const id = ++showReq;
    const seq = S.current;
    if (seq <= 0) {
      actionDetail.textContent = '';
      actionDetail.appendChild(el('p', 'empty', 'Seq 0 is the initial state: no action led to it.'));
      actionPatch.textContent = '';
      actionDiff.setAttribute('data-seq', '0');
      actionDiff.removeAttribute('data-patch');
      return;
    }
    try {
      const data = await api('/api/show', { seq });
      if (id !== showReq) return;
      renderActionDetail(data.action);
      renderPatch(actionPatch, data.patch, 'This action changed nothing.');
      actionDiff.setAttribute('data-patch', JSON.stringify(data.patch === undefined ? [] : data.patch));
      actionDiff.setAttribute('data-seq', String(seq));
    } catch (err) {
      if (id === showReq) reportError(`action at seq ${seq}`, err);
    }
  }

  function renderActionDetail(env) {
    actionDetail.textContent = '';
    if (!env || typeof env !== 'object') return;
    const list = el('dl', 'kv');
    const add = (name, value) => list.append(el('dt', null, name), el('dd', null, value));
    add('seq', env.seq);
    add('type', env.type);
    add('time', env.time || '');
    const peer = env.peer;
    if (peer && typeof peer === 'object') add('peer', `uid ${peer.uid} · gid ${peer.gid} · pid ${peer.pid}`);
    actionDetail.appendChild(list);
    actionDetail.appendChild(el('div', 'sub-label', 'payload'));
    actionDetail.appendChild(el('pre', 'json-block', prettyJSON(env.payload === undefined ? null : env.payload)));
    if (env.meta !== undefined) {
      actionDetail.appendChild(el('div', 'sub-label', 'meta'));
      actionDetail.appendChild(el('pre', 'json-block', prettyJSON(env.meta)));
    }
  }

  /** One `div.patch-op.op-<op>` per op: "op path value" (move/copy: "op from → path"). */
  function renderPatch(container, patch, emptyText) {
    container.textContent = '';
    const ops = Array.isArray(patch) ? patch : [];
    if (ops.length === 0) {
      container.appendChild(el('p', 'empty', emptyText));
      return;
    }
    const frag = document.createDocumentFragment();
    for (const raw of ops.slice(0, PATCH_DISPLAY_MAX)) {
      const op = raw && typeof raw === 'object' ? raw : {};
      const kind = typeof op.op === 'string' ? op.op : '?';
      const row = el('div', `patch-op op-${/^[a-z]+$/.test(kind) ? kind : 'other'}`);
      row.appendChild(el('span', 'po-op', kind));
      if (typeof op.from === 'string') row.appendChild(el('span', 'po-path', `${op.from || '(root)'} →`));
      row.appendChild(el('span', 'po-path', op.path === '' ? '(root)' : String(op.path === undefined ? '' : op.path)));
      if ('value' in op) {
        const valueEl = el('span', 'po-value', compactJSON(op.value, 400));
        valueEl.title = compactJSON(op.value, 4000);
        row.appendChild(valueEl);
      }
      frag.appendChild(row);
    }
    if (ops.length > PATCH_DISPLAY_MAX) {
      frag.appendChild(el('p', 'empty', `… and ${plural(ops.length - PATCH_DISPLAY_MAX, 'more operation')}`));
    }
    container.appendChild(frag);
  }

  // ---------------------------------------------------------------------------------------------
  // 7. Marks A and B, and the diff between them
  // ---------------------------------------------------------------------------------------------

  let markReq = 0;

  /** Shift+click: the first mark is A, the second B, a third starts over. */
  function markSeq(seq) {
    if (S.markA === null) S.markA = seq;
    else if (S.markB === null) {
      if (seq === S.markA) S.markA = null; // shift+clicking A again unmarks it
      else S.markB = seq;
    } else {
      S.markA = seq;
      S.markB = null;
    }
    updateMarks();
  }

  function clearMarks() {
    S.markA = null;
    S.markB = null;
    updateMarks();
  }

  function updateMarks() {
    markALabel.textContent = S.markA === null ? '—' : String(S.markA);
    markBLabel.textContent = S.markB === null ? '—' : String(S.markB);
    clearMarksBtn.disabled = S.markA === null && S.markB === null;
    exportTouched = false; // marks are a fresh choice of range
    setExportDefaults();
    refreshRows();
    void loadMarkDiff();
  }

  async function loadMarkDiff() {
    const id = ++markReq;
    const a = S.markA;
    const b = S.markB;
    if (a === null || b === null) {
      markDiff.textContent = '';
      markDiff.appendChild(el('p', 'empty', a === null
        ? 'Shift+click a row to mark A, then another to mark B.'
        : 'Shift+click another row to mark B.'));
      markDiff.removeAttribute('data-patch');
      markDiff.removeAttribute('data-from');
      markDiff.removeAttribute('data-to');
      return;
    }
    try {
      const data = await api('/api/diff', { from: a, to: b });
      if (id !== markReq) return;
      renderPatch(markDiff, data.patch, `No difference between seq ${a} and seq ${b}.`);
      markDiff.setAttribute('data-patch', JSON.stringify(data.patch === undefined ? [] : data.patch));
      markDiff.setAttribute('data-from', String(a));
      markDiff.setAttribute('data-to', String(b));
    } catch (err) {
      if (id === markReq) reportError(`diff from seq ${a} to seq ${b}`, err);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // 8. What-if, bisect, dispatch and revert, export
  // ---------------------------------------------------------------------------------------------

  let whatifReq = 0;
  const scheduleWhatif = debounce(() => { void runWhatif(); }, WHATIF_DEBOUNCE_MS, 1000);
  const sortedSkipped = () => Array.from(S.skipped).sort((a, b) => a - b);

  function setSkip(seq, skip) {
    if (skip) S.skipped.add(seq); else S.skipped.delete(seq);
    updateSkipped();
  }

  function updateSkipped() {
    const list = sortedSkipped();
    whatifSkipped.textContent = list.join(', ');
    whatifNone.hidden = list.length > 0;
    whatifClear.disabled = list.length === 0;
    refreshRows();
    if (list.length) {
      scheduleWhatif();
    } else {
      scheduleWhatif.cancel();
      whatifReq++; // an answer still on its way is now stale
      clearWhatifResult();
    }
  }

  function clearWhatifResult() {
    whatifAt.textContent = '';
    whatifRefused.textContent = '';
    whatifDiff.textContent = '';
    whatifTree.textContent = '';
    whatifDiff.removeAttribute('data-patch');
    whatifTree.removeAttribute('data-json');
    whatifTree.removeAttribute('data-seq');
  }

  async function runWhatif() {
    const skip = sortedSkipped();
    if (!skip.length) return;
    const id = ++whatifReq;
    const at = S.current;
    whatifAt.textContent = `replaying to seq ${at} without ${plural(skip.length, 'action')}…`;
    try {
      const data = await api('/api/whatif', null, { skip, at });
      if (id !== whatifReq) return;
      const value = data.value === undefined ? null : data.value;
      whatifAt.textContent = `the state at seq ${Number.isFinite(data.seq) ? data.seq : at} without ${plural(skip.length, 'action')}`;
      whatifRefused.textContent = '';
      for (const refusal of Array.isArray(data.refused) ? data.refused : []) {
        const reason = refusal && refusal.reason !== undefined ? refusal.reason : '';
        whatifRefused.appendChild(el('li', null, `seq ${refusal ? refusal.seq : '?'} refused: ${reason}`));
      }
      renderPatch(whatifDiff, data.patch, 'The same as the real state at this seq.');
      whatifDiff.setAttribute('data-patch', JSON.stringify(data.patch === undefined ? [] : data.patch));
      renderTree(whatifTree, value);
      whatifTree.setAttribute('data-json', JSON.stringify(value));
      whatifTree.setAttribute('data-seq', String(at));
    } catch (err) {
      if (id !== whatifReq) return;
      whatifAt.textContent = '';
      reportError('what-if', err);
    }
  }

  let bisectReq = 0;

  async function runBisect() {
    const condition = bisectInput.value.trim();
    const id = ++bisectReq;
    bisectResult.classList.remove('error');
    if (!condition) {
      bisectResult.textContent = 'Type a condition first, e.g. /character/hp < 0';
      bisectResult.classList.add('error');
      bisectResult.setAttribute('data-seq', '');
      return;
    }
    bisectResult.textContent = 'searching…';
    bisectResult.removeAttribute('title');
    try {
      const data = await api('/api/bisect', null, { condition });
      if (id !== bisectReq) return;
      bisectResult.textContent = '';
      bisectResult.title = `${plural(Number(data.probes) || 0, 'state')} evaluated`;
      if (data.seq === null || data.seq === undefined) {
        bisectResult.setAttribute('data-seq', '');
        bisectResult.textContent = `never holds up to seq ${data.latest}`;
      } else {
        const found = Number(data.seq);
        bisectResult.setAttribute('data-seq', String(found));
        bisectResult.appendChild(el('span', null, `first holds at seq ${found}`));
        const jump = el('button', 'btn small', 'jump there');
        jump.type = 'button';
        jump.id = 'bisect-jump';
        jump.setAttribute('aria-label', `Jump to seq ${found}`);
        jump.addEventListener('click', () => setCurrent(found));
        bisectResult.appendChild(jump);
      }
    } catch (err) {
      if (id !== bisectReq) return;
      bisectResult.textContent = errMessage(err);
      bisectResult.classList.add('error');
      bisectResult.setAttribute('data-seq', '');
    }
  }

  function showDispatchResult(message, isError) {
    dispatchResult.textContent = message;
    dispatchResult.classList.toggle('error', Boolean(isError));
    dispatchSection.open = true;
  }

  async function submitDispatch() {
    const type = dispatchType.value.trim();
    if (!type) {
      showDispatchResult('Give the action a type.', true);
      return;
    }
    let payload = null;
    const raw = dispatchPayload.value.trim();
    if (raw) {
      try {
        payload = JSON.parse(raw);
      } catch (err) {
        showDispatchResult(`The payload is not valid JSON: ${errMessage(err)}`, true);
        return;
      }
    }
    showDispatchResult('dispatching…', false);
    try {
      const data = await api('/api/dispatch', null, { type, payload });
      showDispatchResult(`acknowledged as seq ${data.seq}`, false);
      dispatchResult.setAttribute('data-seq', String(data.seq));
      if (Number.isFinite(data.seq)) onLatest(Math.max(S.latest, data.seq)); // before the WebSocket says so
    } catch (err) {
      showDispatchResult(errMessage(err), true);
    }
  }

  let revertTarget = null;

  /** The revert appends an action to the live store: always ask first. */
  function openRevert() {
    revertTarget = S.current;
    revertSeqEl.textContent = String(revertTarget);
    if (typeof revertDialog.showModal === 'function') {
      if (!revertDialog.open) revertDialog.showModal();
    } else if (window.confirm(`This appends a new @revert action that sets the state back to seq ${revertTarget}; the history is kept.`)) {
      void doRevert();
    }
  }

  function closeRevertDialog() {
    if (revertDialog.open && typeof revertDialog.close === 'function') revertDialog.close();
  }

  async function doRevert() {
    const to = revertTarget;
    if (to === null) return;
    revertTarget = null;
    showDispatchResult(`reverting to seq ${to}…`, false);
    try {
      const data = await api('/api/revert', { }, { to });
      showDispatchResult(`acknowledged as seq ${data.seq}: a @revert action set the state back to seq ${to}`, false);
      dispatchResult.setAttribute('data-seq', String(data.seq));
      if (Number.isFinite(data.seq)) onLatest(Math.max(S.latest, data.seq));
    } catch (err) {
      showDispatchResult(errMessage(err), true);
    }
  }

  let exportTouched = false; // the user typed a range: do not overwrite it on every new action

  function setExportDefaults() {
    if (S.markA !== null && S.markB !== null) {
      exportFrom.value = String(Math.min(S.markA, S.markB));
      exportTo.value = String(Math.max(S.markA, S.markB));
    } else {
      exportFrom.value = '1';
      exportTo.value = String(Math.max(1, S.latest));
    }
  }

  /** Downloads through a link with `download`: an error answer then cannot replace the page. */
  function doExport() {
    const from = parseSeq(exportFrom.value);
    const to = parseSeq(exportTo.value);
    if (from === null || to === null || from < 1 || to < from) {
      setStatus('export: give a range of seqs, from 1 or more, "to" not below "from"', true);
      return;
    }
    const url = `/api/export?from=${from}&to=${to}`;
    exportButton.setAttribute('data-href', url);
    const link = el('a');
    link.href = url;
    link.download = `reel-${from}-${to}.ndjson`;
    link.hidden = true;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setStatus(`export of seqs ${from}…${to} requested`, false);
  }

  // ---------------------------------------------------------------------------------------------
  // 9. Live updates: the WebSocket pushes {"seq": N} whenever the latest seq changes
  // ---------------------------------------------------------------------------------------------

  let liveDelay = 1000;
  let liveTimer = 0;

  function connectLive() {
    clearTimeout(liveTimer);
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const url = `${scheme}//${location.host}/api/live${TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : ''}`;
    let socket;
    try {
      socket = new WebSocket(url);
    } catch (err) {
      scheduleReconnect();
      return;
    }
    let openedAt = 0;
    socket.addEventListener('open', () => {
      openedAt = Date.now();
      badgeEl.classList.add('connected');
    });
    socket.addEventListener('message', (event) => {
      let message = null;
      try { message = JSON.parse(event.data); } catch (err) { return; }
      if (message && Number.isFinite(message.seq)) onLatest(message.seq);
    });
    // An error is always followed by close, where the reconnect is scheduled.
    socket.addEventListener('error', () => {});
    socket.addEventListener('close', () => {
      badgeEl.classList.remove('connected');
      // Only a connection that lived a while resets the backoff: a source that closes at once
      // (offline, nothing to push) must not be redialled every second.
      if (openedAt && Date.now() - openedAt > 10000) liveDelay = 1000;
      scheduleReconnect();
    });
  }

  /** Backoff 1 s, 2 s, 4 s … 30 s; an offline source may close at once, so it waits longest. */
  function scheduleReconnect() {
    clearTimeout(liveTimer);
    liveTimer = setTimeout(connectLive, liveDelay);
    liveDelay = Math.min(liveDelay * 2, 30000);
  }

  // ---------------------------------------------------------------------------------------------
  // 10. Keyboard, wiring and start-up
  // ---------------------------------------------------------------------------------------------

  /** Global shortcuts stay out of the way of typing. */
  function isTextField(target) {
    if (!target || !target.tagName) return false;
    if (target.isContentEditable) return true;
    const tag = target.tagName;
    if (tag === 'TEXTAREA' || tag === 'SELECT') return true;
    if (tag !== 'INPUT') return false;
    return !['checkbox', 'radio', 'range', 'button', 'submit', 'reset', 'file', 'color'].includes(target.type);
  }

  function onGlobalKey(event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (revertDialog.open) return;
    const target = event.target;
    if (isTextField(target)) return;
    switch (event.key) {
      case '[': step(-1); break;
      case ']': step(1); break;
      case 'Home':
        if (target === slider) return; // native: the slider moves and fires input
        setCurrent(0);
        break;
      case 'End':
        if (target === slider) return;
        setCurrent(S.latest);
        break;
      case 't': toggleTheme(); break;
      case '/':
        pointerInput.focus();
        pointerInput.select();
        break;
      default: return;
    }
    event.preventDefault();
  }

  function wire() {
    themeBtn.addEventListener('click', toggleTheme);
    statusEl.addEventListener('click', () => setStatus('', false));

    // The log: scroll renders on the next frame; clicks select, shift+click marks.
    logEl.addEventListener('scroll', () => { scheduleRender(); scheduleFetch(); }, { passive: true });
    rowsEl.addEventListener('click', (event) => {
      const row = event.target.closest('.log-row');
      if (!row || event.target.classList.contains('whatif-toggle')) return;
      const seq = Number(row.dataset.seq);
      if (event.shiftKey) markSeq(seq);
      else setCurrent(seq);
    });
    rowsEl.addEventListener('change', (event) => {
      if (!event.target.classList.contains('whatif-toggle')) return;
      const row = event.target.closest('.log-row');
      if (row) setSkip(Number(row.dataset.seq), event.target.checked);
    });
    logEl.addEventListener('keydown', (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        moveSelection(event.key === 'ArrowDown' ? 1 : -1);
      } else if (event.key === ' ' && event.target === logEl) {
        event.preventDefault();
        if (S.current > 0) setSkip(S.current, !S.skipped.has(S.current));
      }
    });
    if (typeof ResizeObserver === 'function') {
      // Only schedule: changing layout inside the observer's callback could loop.
      new ResizeObserver(() => { scheduleRender(); scheduleFetch(); }).observe(logEl);
    } else {
      window.addEventListener('resize', () => { scheduleRender(); scheduleFetch(); });
    }

    for (const input of [filterType, filterPeer, filterText]) input.addEventListener('input', scheduleSearch);
    followBox.addEventListener('change', () => {
      if (followBox.checked) {
        setCurrent(S.latest, false);
        scrollToEnd();
      }
    });

    // Time travel controls.
    const fromSlider = () => setCurrent(Number(slider.value));
    slider.addEventListener('input', fromSlider);
    slider.addEventListener('change', fromSlider);
    stepFirst.addEventListener('click', () => setCurrent(0));
    stepBack.addEventListener('click', () => step(-1));
    stepForward.addEventListener('click', () => step(1));
    stepLast.addEventListener('click', () => setCurrent(S.latest));
    seqInput.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter') return;
      event.preventDefault();
      const seq = parseSeq(seqInput.value);
      if (seq === null) setStatus('go to: type a seq (a whole number from 0)', true);
      else setCurrent(seq);
    });
    pointerInput.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        S.pointer = pointerInput.value.trim();
        void loadState();
      } else if (event.key === 'Escape') {
        pointerInput.blur();
      }
    });

    // Panels.
    clearMarksBtn.addEventListener('click', clearMarks);
    whatifClear.addEventListener('click', () => { S.skipped.clear(); updateSkipped(); });
    bisectForm.addEventListener('submit', (event) => { event.preventDefault(); void runBisect(); });
    dispatchForm.addEventListener('submit', (event) => { event.preventDefault(); void submitDispatch(); });
    dispatchPayload.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        void submitDispatch();
      }
    });
    revertButton.addEventListener('click', openRevert);
    revertCancel.addEventListener('click', () => { revertTarget = null; closeRevertDialog(); });
    revertConfirm.addEventListener('click', () => { closeRevertDialog(); void doRevert(); });
    for (const input of [exportFrom, exportTo]) input.addEventListener('input', () => { exportTouched = true; });
    exportButton.addEventListener('click', doExport);

    document.addEventListener('keydown', onGlobalKey);
    // A last guard: a rejection that escaped a handler goes to the status line, not the console.
    window.addEventListener('unhandledrejection', (event) => {
      event.preventDefault();
      reportError('unexpected', event.reason);
    });
  }

  /** /api/info fills the header and decides what is offered; retried with backoff on failure. */
  async function loadInfo(attempt) {
    try {
      const info = await api('/api/info');
      S.info = info;
      sourceEl.textContent = info.source === undefined ? '' : String(info.source);
      sourceEl.title = sourceEl.textContent;
      reducerEl.textContent = info.reducer === undefined ? '' : String(info.reducer);
      badgeEl.textContent = info.live ? 'live' : 'offline';
      badgeEl.classList.toggle('live', Boolean(info.live));
      badgeEl.classList.toggle('offline', !info.live);
      dispatchSection.hidden = !(info.live && info.canDispatch);
      revertButton.hidden = !(info.live && info.canRevert);
      if (attempt > 0) setStatus('', false);
      S.latest = Number.isFinite(info.seq) ? info.seq : 0;
      applyLatest();
      setCurrent(S.latest, false); // start at the newest state, as a follower would
      scrollToEnd();
      connectLive();
    } catch (err) {
      reportError('loading /api/info', err);
      const delay = Math.min(30000, 1000 * 2 ** Math.min(attempt, 5));
      setTimeout(() => { void loadInfo(attempt + 1); }, delay);
    }
  }

  function start() {
    initTheme();
    wire();
    updateSkipped();
    updateMarks();
    updateLog();
    // The panels load once /api/info has said where the history ends.
    void loadInfo(0);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
