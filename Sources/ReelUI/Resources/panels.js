/*
 * reel ui — the panels that act on a choice of seqs: marks A and B and the diff between them,
 * what-if (replay without some actions), bisect, dispatch and revert, export.
 */

import { $, el, debounce, plural, errMessage, parseSeq } from './util.js';
import { api, setStatus, reportError } from './api.js';
import { S } from './state.js';
import { refreshRows } from './log.js';
import { renderTree } from './tree.js';
import { renderPatch } from './action.js';
import { setCurrent, onLatest } from './travel.js';

const WHATIF_DEBOUNCE_MS = 200;

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
const bisectInput = $('bisect-input');
const bisectResult = $('bisect-result');
const dispatchSection = $('dispatch');
const dispatchType = $('dispatch-type');
const dispatchPayload = $('dispatch-payload');
const dispatchResult = $('dispatch-result');
const dispatchTypes = $('dispatch-types');
const dispatchHelp = $('dispatch-help');
const exportFrom = $('export-from');
const exportTo = $('export-to');
const exportButton = $('export-button');
const revertDialog = $('revert-dialog');
const revertSeqEl = $('revert-seq');

// --- Marks A and B, and the diff between them ---

let markReq = 0;

/** Shift+click: the first mark is A, the second B, a third starts over. */
export function markSeq(seq) {
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

export function clearMarks() {
  S.markA = null;
  S.markB = null;
  updateMarks();
}

export function updateMarks() {
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
    renderPatch(markDiff, data.patch, `No difference between seq ${a} and seq ${b}.`, data.old);
    markDiff.setAttribute('data-patch', JSON.stringify(data.patch === undefined ? [] : data.patch));
    markDiff.setAttribute('data-from', String(a));
    markDiff.setAttribute('data-to', String(b));
  } catch (err) {
    if (id === markReq) reportError(`diff from seq ${a} to seq ${b}`, err);
  }
}

// --- What-if: the state as if some actions had never been dispatched ---

let whatifReq = 0;
export const scheduleWhatif = debounce(() => { void runWhatif(); }, WHATIF_DEBOUNCE_MS, 1000);
const sortedSkipped = () => Array.from(S.skipped).sort((a, b) => a - b);

export function setSkip(seq, skip) {
  if (skip) S.skipped.add(seq); else S.skipped.delete(seq);
  updateSkipped();
}

export function updateSkipped() {
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
    renderPatch(whatifDiff, data.patch, 'The same as the real state at this seq.', data.old);
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

// --- Bisect ---

let bisectReq = 0;

/** Forgets the last answer (and one still on its way): it was for another condition. */
export function clearBisect() {
  bisectReq += 1;
  bisectResult.textContent = '';
  bisectResult.classList.remove('error');
  bisectResult.removeAttribute('title');
  bisectResult.setAttribute('data-seq', '');
}

export async function runBisect() {
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

// --- Dispatch and revert (a live daemon only) ---

/** The store's action types (`describe`): offered in the type field, each with its example. */
const described = new Map();

export async function loadActionTypes() {
  try {
    const data = await api('/api/call/describe', null, {});
    described.clear();
    dispatchTypes.replaceChildren();
    for (const action of data.actions || []) {
      if (typeof action.type !== 'string' || action.type.startsWith('@')) continue;
      described.set(action.type, action);
      const option = document.createElement('option');
      option.value = action.type;
      if (action.schema && typeof action.schema.description === 'string') option.label = action.schema.description;
      dispatchTypes.appendChild(option);
    }
    showActionHelp();
  } catch (err) {
    dispatchHelp.textContent = `The action types could not be read: ${errMessage(err)}`;
  }
}

/** The chosen type's description, and its example payload as the payload field's placeholder. */
export function showActionHelp() {
  const action = described.get(dispatchType.value.trim());
  dispatchHelp.textContent = action && action.schema && typeof action.schema.description === 'string' ? action.schema.description : '';
  const example = action && action.example !== null && action.example !== undefined ? JSON.stringify(action.example) : '';
  dispatchPayload.placeholder = example ? `e.g. ${example}` : '{"path": "/a", "value": 1}';
}

function showDispatchResult(message, isError) {
  dispatchResult.textContent = message;
  dispatchResult.classList.toggle('error', Boolean(isError));
  dispatchSection.open = true;
}

export async function submitDispatch() {
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
export function openRevert() {
  revertTarget = S.current;
  revertSeqEl.textContent = String(revertTarget);
  if (typeof revertDialog.showModal === 'function') {
    if (!revertDialog.open) revertDialog.showModal();
  } else if (window.confirm(`This appends a new @revert action that sets the state back to seq ${revertTarget}; the history is kept.`)) {
    void doRevert();
  }
}

/** Cancel in the dialog: nothing is sent. */
export function cancelRevert() {
  revertTarget = null;
  closeRevertDialog();
}

export function closeRevertDialog() {
  if (revertDialog.open && typeof revertDialog.close === 'function') revertDialog.close();
}

export async function doRevert() {
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

// --- Export ---

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

/** The user typed a range. */
export function touchExport() {
  exportTouched = true;
}

/** The latest seq changed: the range follows it unless the user chose one. */
export function refreshExportDefaults() {
  if (!exportTouched) setExportDefaults();
}

/** Downloads through a link with `download`: an error answer then cannot replace the page. */
export function doExport() {
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
