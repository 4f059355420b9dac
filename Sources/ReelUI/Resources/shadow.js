/*
 * reel ui — a shadow report (`reel ui --shadow-report FILE`: what `APP shadow --json` printed):
 * for each part of the state, the same under both versions of the reducers or the first seq
 * where they part, with its action and a button that travels there; the actions one version
 * refuses and the other accepts, each a seq to go to.
 */

import { $, el, fmtInt, compactJSON, errMessage } from './util.js';
import { api } from './api.js';
import { setCurrent } from './travel.js';

const section = $('shadow');
const summaryEl = $('shadow-summary');
const partsEl = $('shadow-parts');
const refusedEl = $('shadow-refused');

/** A button that travels to `seq`. */
function goButton(seq, label) {
  const button = el('button', 'btn small', `seq ${fmtInt(seq)}`);
  button.type = 'button';
  button.dataset.seq = String(seq);
  button.setAttribute('aria-label', label);
  button.addEventListener('click', () => setCurrent(seq));
  return button;
}

/** Asks for the report (when /api/info says there is one) and shows it. */
export async function loadShadow() {
  let report;
  try {
    report = await api('/api/shadow');
  } catch (err) {
    section.hidden = false;
    summaryEl.textContent = `the shadow report could not be read: ${errMessage(err)}`;
    summaryEl.classList.add('error');
    return;
  }
  section.hidden = false;
  const actions = Number(report.actions) || 0;
  summaryEl.textContent = `${report.same ? 'the same' : 'not the same'} over ${fmtInt(actions)} actions`;
  summaryEl.dataset.same = String(Boolean(report.same));
  partsEl.replaceChildren();
  for (const part of Array.isArray(report.parts) ? report.parts : []) {
    const path = part.path === '' ? '(root)' : String(part.path);
    const row = el('li', 'shadow-part');
    row.dataset.path = String(part.path);
    row.appendChild(el('code', null, path));
    if (part.same || part.seq === undefined) {
      row.appendChild(el('span', 'shadow-same', 'same'));
    } else {
      row.dataset.seq = String(part.seq);
      row.appendChild(el('span', 'shadow-differs', 'differs from'));
      row.appendChild(goButton(part.seq, `${path} first differs at seq ${part.seq}: go there`));
      if (part.action) row.appendChild(el('span', 'shadow-action', `${part.action.type} ${compactJSON(part.action.payload, 80)}`));
    }
    partsEl.appendChild(row);
  }
  refusedEl.replaceChildren();
  for (const [key, label] of [['refusedByThisOnly', 'refused by this version only'], ['refusedByBaselineOnly', 'refused by the baseline only']]) {
    const seqs = Array.isArray(report[key]) ? report[key] : [];
    if (!seqs.length) continue;
    const row = el('li', 'shadow-refused');
    row.dataset.kind = key;
    row.appendChild(el('span', null, `${label}:`));
    for (const seq of seqs.slice(0, 20)) row.appendChild(goButton(seq, `${label}: seq ${seq}, go there`));
    if (seqs.length > 20) row.appendChild(el('span', null, `and ${fmtInt(seqs.length - 20)} more`));
    refusedEl.appendChild(row);
  }
}
