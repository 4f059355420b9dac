/*
 * reel ui — time travel: the seq being looked at and the latest seq, the controls that show
 * them, and the (debounced) reload of the panels when the current seq changes.
 */

import { $, leadingDebounce, clamp, fmtInt, parseSeq } from './util.js';
import { setStatus } from './api.js';
import { S, rowCount, seqAt, lowerIndex } from './state.js';
import { updateLog, refreshRows, scrollToSeq, scrollToEnd, scheduleSearch, filtersActive } from './log.js';
import { loadState } from './tree.js';
import { loadShow } from './action.js';
import { scheduleWhatif, refreshExportDefaults } from './panels.js';
import { drawFindMarks } from './find.js';

const TRAVEL_DEBOUNCE_MS = 50;

const followBox = $('follow');
const slider = $('slider');
const stepFirst = $('step-first');
const stepBack = $('step-back');
const stepForward = $('step-forward');
const stepLast = $('step-last');
const seqInput = $('seq-input');
const seqDisplay = $('seq-display');
const seqLatest = $('seq-latest');
const stateNote = $('state-note');

const loadCurrentSoon = leadingDebounce(() => {
  void loadState();
  void loadShow();
  if (S.skipped.size) scheduleWhatif();
}, TRAVEL_DEBOUNCE_MS, 250);

/** Travels to `seq`: controls, selected row, then (debounced) the panels. */
export function setCurrent(seq, scroll = true) {
  if (!Number.isFinite(seq)) return;
  seq = clamp(Math.trunc(seq), S.origin, S.latest);
  S.current = seq;
  slider.value = String(seq);
  seqDisplay.textContent = String(seq);
  if (document.activeElement !== seqInput) seqInput.value = String(seq);
  updateStepButtons();
  stateNote.textContent = `at seq ${seq}`;
  if (scroll && seq > S.origin) scrollToSeq(seq);
  refreshRows();
  loadCurrentSoon();
}

function updateStepButtons() {
  stepFirst.disabled = stepBack.disabled = S.current <= S.origin;
  stepLast.disabled = stepForward.disabled = S.current >= S.latest;
}

export function step(delta) {
  setCurrent(S.current + delta);
}

/** Up/Down in the log: the neighbouring row of the current view (filtered or not). */
export function moveSelection(dir) {
  const n = rowCount();
  if (n === 0) return;
  const i = lowerIndex(S.current);
  const onRow = i < n && seqAt(i) === S.current;
  const next = dir > 0 ? (onRow ? i + 1 : i) : i - 1;
  if (next < 0 || next >= n) return;
  setCurrent(seqAt(next));
}

/** Called with every latest seq learnt (info, WebSocket, history/search answers, dispatch). */
export function onLatest(seq) {
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

export function applyLatest() {
  slider.min = String(S.origin);
  seqInput.min = String(S.origin);
  slider.max = String(S.latest);
  seqInput.max = String(S.latest);
  seqLatest.textContent = fmtInt(S.latest);
  updateStepButtons();
  refreshExportDefaults();
  drawFindMarks(); // placed in fractions of the latest seq
  updateLog();
}

/** Whether `target` is the slider, whose Home and End keys the browser handles itself. */
export function isSlider(target) {
  return target === slider;
}

/** The controls of time travel: the slider, the step buttons and the seq field. */
export function wireTravelControls() {
  const fromSlider = () => setCurrent(Number(slider.value));
  slider.addEventListener('input', fromSlider);
  slider.addEventListener('change', fromSlider);
  stepFirst.addEventListener('click', () => setCurrent(S.origin));
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
}
