/*
 * reel ui — find all: every run of seqs at which the bisect form's condition holds (the
 * protocol's `find`), as bands on the slider and as a short list. Bisect answers for a condition
 * that stays once it holds; this is for one that comes and goes.
 */

import { $, el, fmtInt, plural, errMessage } from './util.js';
import { api } from './api.js';
import { S } from './state.js';
import { setCurrent } from './travel.js';

// Past this many runs the bands are a smear and the list unreadable: the rest are left out, and
// the answer says so.
const MAX_RUNS = 1000;
// Runs asked for per request: each page rebuilds the state at its start from a checkpoint, so
// not too few; and a long search shows its progress between pages.
const PAGE_RUNS = 200;
// Runs written out in the list; every one of them is on the slider.
const LISTED_RUNS = 12;

const conditionInput = $('bisect-input');
const findResult = $('find-result');
const marksEl = $('slider-marks');

let runs = []; // the last answer's runs, {from, to?}: redrawn when the latest seq moves
let searched = 0; // the last seq that answer searched: a run without `to` held there
let findReq = 0;

/**
 * Every run at which `condition` holds, oldest first, following `next` page by page up to
 * MAX_RUNS. Resolves to {runs, through, capped}; rejects with the API's error (a condition
 * that does not parse is the protocol's -32602, with its column).
 */
export async function findRuns(condition, pageRuns = PAGE_RUNS, onPage = () => {}) {
  const found = [];
  let from = 1;
  for (;;) {
    const limit = Math.min(pageRuns, MAX_RUNS - found.length);
    const page = await api('/api/call/find', null, { condition, from, limit });
    found.push(...page.ranges);
    const more = page.next !== undefined && page.next !== null;
    if (!more || found.length >= MAX_RUNS) return { runs: found, through: page.through, capped: more };
    onPage(found.length, page.through);
    from = page.next;
  }
}

/** "2–3" for a run, "5" for one seq, "8–" for one that still holds at the latest seq. */
const runText = (run) => (run.to === undefined ? `${run.from}–` : run.to === run.from ? `${run.from}` : `${run.from}–${run.to}`);

function show(text, isError) {
  findResult.textContent = text;
  findResult.classList.toggle('error', Boolean(isError));
}

/** Forgets the last answer, bands and list (and one still on its way): it was for another condition. */
export function clearFind() {
  findReq += 1;
  runs = [];
  drawFindMarks();
  findResult.dataset.ranges = '';
  show('', false);
}

/** The "find all" button: asks, then draws the bands and writes the list. */
export async function runFind() {
  const condition = conditionInput.value.trim();
  const id = ++findReq;
  runs = [];
  drawFindMarks();
  findResult.dataset.ranges = '';
  if (!condition) return show('Type a condition first, e.g. /character/hp < 0', true);
  if (S.latest === S.origin) return show('no action yet: there is no seq to search', false);
  show('finding…', false);
  try {
    const answer = await findRuns(condition, PAGE_RUNS, (count, through) => {
      if (id === findReq) show(`finding… ${plural(count, 'run')} up to seq ${fmtInt(through)}`, false);
    });
    if (id !== findReq) return;
    runs = answer.runs;
    searched = answer.through;
    findResult.dataset.ranges = JSON.stringify(runs);
    drawFindMarks();
    if (!runs.length) return show(`never holds in seqs 1–${answer.through}`, false);
    const listed = runs.slice(0, LISTED_RUNS).map(runText).join(', ');
    const rest = runs.length > LISTED_RUNS ? ` and ${fmtInt(runs.length - LISTED_RUNS)} more (all on the slider)` : '';
    const capped = answer.capped ? `; only the first ${fmtInt(MAX_RUNS)} runs, up to seq ${answer.through}, are shown` : '';
    show(`holds at ${listed}${rest} · ${plural(runs.length, 'run')}${capped}`, false);
  } catch (err) {
    if (id !== findReq) return;
    show(errMessage(err), true);
  }
}

/**
 * One band per run over the slider's track, from its first seq to its last (or the latest seq),
 * placed in fractions of the latest seq: drawn again whenever the latest seq changes. A band is
 * a button that travels to the run's first seq.
 */
export function drawFindMarks() {
  marksEl.replaceChildren();
  marksEl.hidden = runs.length === 0;
  if (!runs.length || S.latest <= S.origin) return;
  // Half a step either side, so a run of one seq is as wide as a step of the slider.
  const at = (seq) => Math.min(100, Math.max(0, ((seq - S.origin) / (S.latest - S.origin)) * 100));
  for (const run of runs) {
    // A run open at the search's end is drawn to there: later actions were not asked about.
    const last = run.to === undefined ? Math.min(searched, S.latest) : run.to;
    const band = el('button', 'find-mark');
    band.type = 'button';
    band.dataset.from = String(run.from);
    band.dataset.to = run.to === undefined ? '' : String(run.to);
    band.style.left = `${at(run.from - 0.5)}%`;
    band.style.width = `${at(last + 0.5) - at(run.from - 0.5)}%`;
    const label = `holds at ${runText(run)}: go to seq ${run.from}`;
    band.title = label;
    band.setAttribute('aria-label', label);
    band.addEventListener('click', () => setCurrent(run.from));
    marksEl.appendChild(band);
  }
}
