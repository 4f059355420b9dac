/*
 * reel ui — branches of the history: a picker in the header (shown when the store has branches)
 * that switches the log, the slider and the state to a branch, and a button that compares the
 * branch's latest state with the main history's.
 *
 * On a branch, every read the page makes carries `branch` (api.js adds it), and the live feed,
 * which reports the main history's seqs, is set aside.
 */

import { $ } from './util.js';
import { api, reportError } from './api.js';
import { S } from './state.js';
import { renderPatch } from './action.js';
import { applyLatest, setCurrent } from './travel.js';
import { resetLog, scrollToEnd } from './log.js';

const picker = $('branch-select');
const pickerBox = $('branch-picker');
const compareButton = $('branch-compare');
const comparison = $('branch-comparison');
const comparisonTitle = $('branch-comparison-title');
const comparisonPatch = $('branch-comparison-patch');

/** Lists the branches; the picker appears when there is at least one. */
export async function loadBranches() {
  let list;
  try {
    list = (await api('/api/call/branches', null, {})).branches || [];
  } catch (err) {
    reportError('listing the branches', err);
    return;
  }
  pickerBox.hidden = list.length === 0;
  picker.textContent = '';
  picker.appendChild(new Option('main history', ''));
  for (const branch of list) {
    picker.appendChild(new Option(`${branch.name} (from seq ${branch.at})`, branch.name));
  }
  picker.value = S.branch || '';
}

async function switchTo(name) {
  S.branch = name || null;
  S.view = null;
  compareButton.hidden = !S.branch;
  comparison.hidden = true;
  try {
    const latest = S.branch ? (await api('/api/state', { path: '' })).seq : (await api('/api/info')).seq;
    S.latest = latest;
    resetLog();
    applyLatest();
    setCurrent(latest, false);
    scrollToEnd();
  } catch (err) {
    reportError(`switching to ${S.branch ? `branch ${S.branch}` : 'the main history'}`, err);
  }
}

/** The patch from the main history's latest state to the branch's latest. */
async function compare() {
  if (!S.branch) return;
  const name = S.branch;
  try {
    const main = (await api('/api/info')).seq;
    const data = await api('/api/diff', { from: main, to: S.latest, branch: '', toBranch: name });
    comparisonTitle.textContent = `from the main history (seq ${main}) to branch ${name} (seq ${S.latest})`;
    renderPatch(comparisonPatch, data.patch, 'no difference: the branch ends where the main history does', data.old);
    comparison.hidden = false;
  } catch (err) {
    reportError(`comparing branch ${name}`, err);
  }
}

export function wireBranches() {
  picker.addEventListener('change', () => { void switchTo(picker.value); });
  compareButton.addEventListener('click', () => { void compare(); });
  $('branch-comparison-close').addEventListener('click', () => { comparison.hidden = true; });
}
