/*
 * reel ui — the action panel: the action at the current seq and what it changed, and the
 * rendering of JSON Patches (also used by the marks and what-if panels).
 */

import { $, el, plural, compactJSON, prettyJSON } from './util.js';
import { api, reportError } from './api.js';
import { S } from './state.js';

const PATCH_DISPLAY_MAX = 2000;     // ops rendered; data-patch always holds all of them

const actionDiff = $('action-diff');
const actionDetail = $('action-detail');
const actionPatch = $('action-patch');

let showReq = 0;

export async function loadShow() {
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
export function renderPatch(container, patch, emptyText) {
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
