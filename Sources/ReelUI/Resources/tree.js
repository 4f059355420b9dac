/*
 * reel ui — the state panel: the state (or the part a JSON Pointer picks) at the current seq,
 * rendered as a lazily built, collapsible tree (also used by the what-if panel). In the state
 * panel each node carries its JSON Pointer (data-pointer) and a "changes" button, which filters
 * the log by that node (main.js wires it); each time nodes are built the tree says so with a
 * `tree-built` event, on which blame.js annotates the new leaves.
 */

import { $, el, fmtInt, plural, errMessage } from './util.js';
import { api, reportError } from './api.js';
import { S } from './state.js';

const TREE_CHUNK = 100;             // children rendered per expansion step

const stateNote = $('state-note');
const pointerError = $('pointer-error');
const stateTree = $('state-tree');

let stateReq = 0;
let renders = 0;

/** A key of an object or an index of an array as a JSON Pointer token (RFC 6901). */
const token = (key) => String(key).replace(/~/g, '~0').replace(/\//g, '~1');

/** The state (or the pointed-at part of it) at the current seq; only the newest answer shows. */
export async function loadState() {
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
    stateTree.setAttribute('data-json', JSON.stringify(value));
    stateTree.setAttribute('data-seq', String(seq));
    renderTree(stateTree, value, { base: pointer });
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

/**
 * Renders `value` as a collapsible tree into `container`. With `base` (the pointer of `value` in
 * the state), every node carries its pointer and a "changes" button (but the whole state's: its
 * changes are every action's), and the container gets a new data-render and a `tree-built`
 * event ({initial: true}); each later expansion sends `tree-built` ({initial: false}) too.
 */
export function renderTree(container, value, options = {}) {
  const base = typeof options.base === 'string' ? options.base : null;
  container.textContent = '';
  const root = el('div', 'tree');
  root.setAttribute('role', 'tree');
  root.appendChild(treeNode(null, value, 0, base));
  container.appendChild(root);
  if (base === null) return;
  container.dataset.render = String(++renders);
  container.dispatchEvent(new CustomEvent('tree-built', { detail: { initial: true } }));
}

/** The "changes" buttons show which node filters the log (S.changed). */
export function markChangedNode() {
  for (const button of stateTree.querySelectorAll('.tn-changes')) {
    button.setAttribute('aria-pressed', String(button.dataset.pointer === S.changed));
  }
}

/** A button that filters the log to the actions that changed the node at `pointer`. */
function changesButton(pointer) {
  const button = el('button', 'tn-changes', 'changes');
  button.type = 'button';
  button.dataset.pointer = pointer;
  button.title = `Show in the log only the actions that changed ${pointer}`;
  button.setAttribute('aria-label', `Filter the log: only the actions that changed ${pointer}`);
  button.setAttribute('aria-pressed', String(pointer === S.changed));
  return button;
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
function treeNode(key, value, depth, pointer) {
  const node = el('div', 'tn');
  node.setAttribute('role', 'treeitem');
  if (pointer !== null) node.dataset.pointer = pointer;
  const line = el('div', 'tn-line');
  node.appendChild(line);
  const child = (childKey) => (pointer === null ? null : `${pointer}/${token(childKey)}`);
  const isContainer = value !== null && typeof value === 'object';
  const keys = isContainer && !Array.isArray(value) ? Object.keys(value) : null;
  const count = !isContainer ? 0 : (keys ? keys.length : value.length);
  const keyEl = key === null ? null
    : el('span', typeof key === 'number' ? 'tn-key tn-index' : 'tn-key', key === '' ? '""' : key);

  if (!isContainer || count === 0) {
    node.classList.add('tn-leaf');
    line.appendChild(el('span', 'tn-pad'));
    if (keyEl) line.appendChild(keyEl);
    line.appendChild(valueSpan(value));
    if (pointer) line.appendChild(changesButton(pointer));
    return node;
  }

  const toggle = el('button', 'tn-toggle');
  toggle.type = 'button';
  line.appendChild(toggle);
  if (keyEl) line.appendChild(keyEl);
  const summary = el('span', 'tn-summary', keys ? `{…} ${plural(count, 'key')}` : `[…] ${plural(count, 'item')}`);
  line.appendChild(summary);
  if (pointer) line.appendChild(changesButton(pointer));
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
      if (keys) frag.appendChild(treeNode(keys[i], value[keys[i]], depth + 1, child(keys[i])));
      else frag.appendChild(treeNode(i, value[i], depth + 1, child(i)));
    }
    built = end;
    if (built < count) {
      const more = el('button', 'tn-more', `show ${fmtInt(Math.min(TREE_CHUNK, count - built))} more (${fmtInt(count - built)} left)`);
      more.type = 'button';
      more.addEventListener('click', buildMore);
      frag.appendChild(more);
    }
    children.appendChild(frag);
    // Built on a click (the first render announces its nodes once, from renderTree).
    if (pointer !== null && children.isConnected) {
      children.dispatchEvent(new CustomEvent('tree-built', { bubbles: true, detail: { initial: false } }));
    }
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
