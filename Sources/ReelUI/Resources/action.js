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
const actionPayload = $('action-payload');

let showReq = 0;

export async function loadShow() {
  const id = ++showReq;
  const seq = S.current;
  if (seq <= S.origin) {
    actionDetail.textContent = '';
    actionDetail.appendChild(el('p', 'empty', S.origin > 0
      ? `Seq ${seq} is the state this history starts from (a bundle's): its actions are not here.`
      : 'Seq 0 is the initial state: no action led to it.'));
    actionPatch.textContent = '';
    actionPayload.textContent = '';
    actionDiff.setAttribute('data-seq', '0');
    actionDiff.removeAttribute('data-patch');
    return;
  }
  try {
    const data = await api('/api/show', { seq });
    if (id !== showReq) return;
    renderActionDetail(data.action);
    renderPatch(actionPatch, data.patch, 'This action changed nothing.', data.old);
    actionDiff.setAttribute('data-patch', JSON.stringify(data.patch === undefined ? [] : data.patch));
    actionDiff.setAttribute('data-seq', String(seq));
  } catch (err) {
    if (id === showReq) reportError(`action at seq ${seq}`, err);
  }
}

/** The type, then seq, time and peer (its executable too) on one line, as `reel show` prints
 *  them; the payload and the dispatch's meta (trace context, correlation and causation ids,
 *  source) go below the changes, which are what one looks for first. */
function renderActionDetail(env) {
  actionDetail.textContent = '';
  actionPayload.textContent = '';
  if (!env || typeof env !== 'object') return;
  const peer = env.peer && typeof env.peer === 'object' ? env.peer : null;
  const meta = [`seq ${env.seq}`, env.time || ''];
  if (peer) meta.push(`uid ${peer.uid} · gid ${peer.gid} · pid ${peer.pid}`);
  // The sender's executable, read by the daemon once per connection (absent for older records).
  if (peer && typeof peer.exe === 'string') meta.push(peer.exe);
  actionDetail.append(el('span', 'action-type', env.type), el('span', 'action-meta', meta.filter(Boolean).join(' · ')));
  actionPayload.appendChild(el('div', 'sub-label', 'payload'));
  actionPayload.appendChild(el('pre', 'json-block', prettyJSON(env.payload === undefined ? null : env.payload)));
  if (env.meta !== undefined) {
    actionPayload.appendChild(el('div', 'sub-label', 'meta'));
    actionPayload.appendChild(el('pre', 'json-block', prettyJSON(env.meta)));
  }
}

function valueSpan(className, value) {
  const span = el('span', className, compactJSON(value, 400));
  span.title = compactJSON(value, 4000);
  return span;
}

/**
 * One `div.patch-op.op-<op>` per op: "op path old → new" (move/copy: "op from → path"). `old`,
 * from the API, holds per op what it overwrote (`{value}`, or null for nothing), so a change
 * reads old → new and a removal shows what went, as `reel show` prints them.
 */
export function renderPatch(container, patch, emptyText, old) {
  container.textContent = '';
  const ops = Array.isArray(patch) ? patch : [];
  if (ops.length === 0) {
    container.appendChild(el('p', 'empty', emptyText));
    return;
  }
  const olds = Array.isArray(old) ? old : [];
  const frag = document.createDocumentFragment();
  ops.slice(0, PATCH_DISPLAY_MAX).forEach((raw, i) => {
    const op = raw && typeof raw === 'object' ? raw : {};
    const kind = typeof op.op === 'string' ? op.op : '?';
    const row = el('div', `patch-op op-${/^[a-z]+$/.test(kind) ? kind : 'other'}`);
    row.appendChild(el('span', 'po-op', kind));
    if (typeof op.from === 'string') row.appendChild(el('span', 'po-path', `${op.from || '(root)'} →`));
    row.appendChild(el('span', 'po-path', op.path === '' ? '(root)' : String(op.path === undefined ? '' : op.path)));
    const was = olds[i] && typeof olds[i] === 'object' && 'value' in olds[i] ? olds[i] : null;
    const change = el('span', 'po-change');
    if (was) {
      if (!('value' in op)) change.appendChild(el('span', 'po-was', 'was'));
      change.appendChild(valueSpan('po-old', was.value));
      if ('value' in op) change.appendChild(el('span', 'po-arrow', '→'));
    }
    // A test's value is what it compares with, not a new value.
    if ('value' in op) change.appendChild(valueSpan(kind === 'test' ? 'po-value' : 'po-new', op.value));
    if (change.firstChild) row.appendChild(change);
    frag.appendChild(row);
  });
  if (ops.length > PATCH_DISPLAY_MAX) {
    frag.appendChild(el('p', 'empty', `… and ${plural(ops.length - PATCH_DISPLAY_MAX, 'more operation')}`));
  }
  container.appendChild(frag);
}
