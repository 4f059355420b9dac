/*
 * reel ui — the browser side of Reel's visual time-travel debugger: start-up, the wiring of
 * the controls, and the keyboard shortcuts.
 *
 * Native ES modules, no dependencies (the page must work offline and the server's CSP allows
 * only this origin's files). No module does anything at import time beyond looking up its
 * elements and creating its debouncers: everything starts from start() here.
 *
 *   util.js    helpers: el(), debounce, leadingDebounce, formatting
 *   api.js     the JSON API (token, errors) and the status line
 *   state.js   the shared state object S and the row <-> seq accessors
 *   theme.js   light and dark
 *   log.js     the virtual action log: row pooling, page fetching, filters (the "changed" chip too)
 *   travel.js  the current and latest seqs, the time travel controls
 *   tree.js    the state panel, the JSON tree, the pointer, each node's "changes" button
 *   blame.js   beside each value of the tree, the action that last changed it
 *   action.js  the action at the current seq, patch rendering
 *   panels.js  marks and their diff, what-if, bisect, dispatch and revert, export
 *   find.js    find all: the runs where the bisect condition holds, as bands on the slider
 *   shadow.js  a shadow report (reel ui --shadow-report): where another version's reducers part
 *   live.js    the WebSocket, with backoff
 *   branches.js the branch picker: the log, slider and state of a branch, and its comparison with main
 */

import { $ } from './util.js';
import { api, setStatus, reportError } from './api.js';
import { S } from './state.js';
import { initTheme, toggleTheme } from './theme.js';
import { updateLog, scheduleRender, scheduleFetch, scrollToEnd, scheduleSearch, setChangedFilter } from './log.js';
import { setCurrent, step, moveSelection, applyLatest, isSlider, wireTravelControls } from './travel.js';
import { loadState, markChangedNode } from './tree.js';
import { blameTree, scheduleBlame } from './blame.js';
import {
  markSeq, clearMarks, updateMarks, setSkip, updateSkipped, runBisect, clearBisect, submitDispatch, loadActionTypes, showActionHelp,
  openRevert, cancelRevert, closeRevertDialog, doRevert, touchExport, doExport,
} from './panels.js';
import { runFind, clearFind } from './find.js';
import { loadShadow } from './shadow.js';
import { connectLive } from './live.js';
import { loadBranches, wireBranches } from './branches.js';

const sourceEl = $('source');
const reducerEl = $('reducer');
const badgeEl = $('mode-badge');
const themeBtn = $('theme-toggle');
const filterType = $('filter-type');
const filterPeer = $('filter-peer');
const filterText = $('filter-text');
const followBox = $('follow');
const logEl = $('log');
const rowsEl = $('log-rows');
const revertButton = $('revert-button');
const pointerInput = $('pointer-input');
const stateTree = $('state-tree');
const logChips = $('log-chips');
const clearMarksBtn = $('clear-marks');
const whatifClear = $('whatif-clear');
const bisectForm = $('bisect-form');
const findRun = $('find-run');
const dispatchSection = $('dispatch');
const dispatchForm = $('dispatch-form');
const dispatchPayload = $('dispatch-payload');
const dispatchType = $('dispatch-type');
const exportFrom = $('export-from');
const exportTo = $('export-to');
const exportButton = $('export-button');
const statusEl = $('status');
const revertDialog = $('revert-dialog');
const revertConfirm = $('revert-confirm');
const revertCancel = $('revert-cancel');

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
      if (isSlider(target)) return; // native: the slider moves and fires input
      setCurrent(S.origin);
      break;
    case 'End':
      if (isSlider(target)) return;
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

/** Filters the log by a node of the state tree (null: no longer), and shows which. */
function filterByNode(pointer) {
  setChangedFilter(pointer);
  markChangedNode();
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

  wireTravelControls();
  wireBranches();
  // The state tree: a node's "changes" filters the log by it (again: no longer); a value's blame
  // travels to the action that last changed it. Its nodes are blamed as they are built.
  stateTree.addEventListener('click', (event) => {
    const changes = event.target.closest('.tn-changes');
    if (changes) {
      filterByNode(changes.dataset.pointer === S.changed ? null : changes.dataset.pointer);
      return;
    }
    const blame = event.target.closest('button.tn-blame');
    if (blame) setCurrent(Number(blame.dataset.seq));
  });
  stateTree.addEventListener('tree-built', (event) => {
    if (event.detail && event.detail.initial) scheduleBlame(); // another seq or node: once the slider rests
    else void blameTree(); // a node opened: its values at once
  });
  logChips.addEventListener('click', (event) => {
    if (!event.target.closest('.chip-remove')) return;
    filterByNode(null);
    logEl.focus();
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
  findRun.addEventListener('click', () => { void runFind(); });
  // An answer shown beside a condition it was not for would mislead: editing clears both.
  $('bisect-input').addEventListener('input', () => { clearBisect(); clearFind(); });
  dispatchForm.addEventListener('submit', (event) => { event.preventDefault(); void submitDispatch(); });
  dispatchType.addEventListener('input', showActionHelp);
  dispatchPayload.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void submitDispatch();
    }
  });
  revertButton.addEventListener('click', openRevert);
  revertCancel.addEventListener('click', cancelRevert);
  revertConfirm.addEventListener('click', () => { closeRevertDialog(); void doRevert(); });
  for (const input of [exportFrom, exportTo]) input.addEventListener('input', touchExport);
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
    if (info.live && info.canDispatch) void loadActionTypes();
    revertButton.hidden = !(info.live && info.canRevert);
    if (attempt > 0) setStatus('', false);
    S.origin = Number.isFinite(info.origin) ? info.origin : 0;
    S.latest = Number.isFinite(info.seq) ? info.seq : 0;
    applyLatest();
    setCurrent(S.latest, false); // start at the newest state, as a follower would
    scrollToEnd();
    connectLive();
    if (info.shadow) void loadShadow();
    void loadBranches();
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
