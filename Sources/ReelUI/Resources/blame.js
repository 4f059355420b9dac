/*
 * reel ui — blame in the state tree: beside each value (leaf) the tree shows, the seq and type
 * of the action that last changed it at the seq the tree shows (the protocol's `blame`, as
 * `reel blame PATH --at SEQ` prints it), a button that travels there (main.js wires it).
 *
 * Cheap on purpose: one `blame` of the node the tree shows, with a limit, once the slider has
 * rested (a drag asks nothing until it stops, or once a second). Only when that node has more
 * leaves than one answer holds are the values shown past them asked for: by their containers
 * (opened below it), then, for those still past a container's limit (answers go in document
 * order, so a container's own values can come after a large sibling), one by one. Answers are
 * cached by seq and path, so stepping back and forth asks nothing again.
 */

import { $, el, debounce } from './util.js';
import { api, reportError } from './api.js';

const BLAME_LIMIT = 500;            // leaves per answer
const BLAME_DEBOUNCE_MS = 150;      // after the tree was rendered for another seq or node
const CACHE_MAX = 64;               // answers kept (seq + path), the least recently used dropped
const MAX_CONTAINERS = 16;          // containers asked for in one pass, past the node's own limit
const MAX_LEAVES = 100;             // values asked for one by one in one pass, past their container's

const stateTree = $('state-tree');

/** `${seq} ${path}` -> the promise of {entries: Map(path -> entry), complete}. */
const cache = new Map();

/** The blame of the leaves under `path` in the state at `seq`: the first BLAME_LIMIT of them, in
 *  document order (`complete` when that is all of them). */
function blameOf(seq, path) {
  const key = `${seq} ${path}`;
  let answer = cache.get(key);
  if (answer) {
    cache.delete(key); // most recently used: last in the map's order
    cache.set(key, answer);
    return answer;
  }
  answer = api('/api/call/blame', null, { path, at: seq, limit: BLAME_LIMIT }).then((data) => {
    const entries = new Map();
    for (const entry of Array.isArray(data.entries) ? data.entries : []) {
      if (entry && typeof entry.path === 'string') entries.set(entry.path, entry);
    }
    return { entries, complete: data.next === undefined || data.next === null };
  });
  cache.set(key, answer);
  answer.catch(() => { if (cache.get(key) === answer) cache.delete(key); }); // asked again next time
  while (cache.size > CACHE_MAX) cache.delete(cache.keys().next().value);
  return answer;
}

const parentOf = (pointer) => pointer.slice(0, pointer.lastIndexOf('/'));

/** The tree's leaves that have no blame yet. */
function unblamedLeaves() {
  return Array.from(stateTree.querySelectorAll('.tn-leaf[data-pointer]'))
    .filter((leaf) => !leaf.firstElementChild.querySelector('.tn-blame'));
}

/** "seq type" after the leaf's value: a button that travels to that seq; for a value no action
 *  changed, "initial". `treeSeq` is the seq the tree shows: its own action's changes stand out. */
function blameChip(entry, treeSeq) {
  const seq = Number.isFinite(entry.seq) ? entry.seq : 0;
  if (seq === 0) {
    const chip = el('span', 'tn-blame initial', 'initial');
    chip.dataset.seq = '0';
    chip.title = 'No action changed this value: it is as in the initial state (seq 0)';
    return chip;
  }
  const type = typeof entry.type === 'string' ? entry.type : '';
  const chip = el('button', 'tn-blame');
  chip.type = 'button';
  chip.dataset.seq = String(seq);
  chip.classList.toggle('current', seq === treeSeq);
  chip.append(el('span', 'tb-seq', seq), el('span', 'tb-type', type));
  const peer = entry.peer && typeof entry.peer === 'object' ? ` · uid ${entry.peer.uid}` : '';
  chip.title = `Last changed by seq ${seq} · ${type} · ${entry.time || ''}${peer}: click to travel there`;
  chip.setAttribute('aria-label', `Last changed by seq ${seq}, ${type}: travel there`);
  return chip;
}

/** Puts each leaf's blame from `answers` beside it; returns the leaves none of them covers. */
function annotate(leaves, answers, treeSeq) {
  const missing = [];
  for (const leaf of leaves) {
    const line = leaf.firstElementChild;
    if (line.querySelector('.tn-blame')) continue; // another pass was quicker
    const pointer = leaf.dataset.pointer;
    const entry = answers.map((answer) => answer.entries.get(pointer)).find(Boolean);
    if (entry) line.appendChild(blameChip(entry, treeSeq));
    else missing.push(leaf);
  }
  return missing;
}

/**
 * Blames the leaves the tree has built and not blamed yet: with the blame of the node the tree
 * shows; those past its limit with the blame of their containers below it; those still past it
 * one by one. Answers for a tree replaced meanwhile (another seq, another node) are dropped.
 */
export async function blameTree() {
  const render = stateTree.dataset.render;
  const treeSeq = Number(stateTree.dataset.seq);
  const root = stateTree.querySelector('.tn[data-pointer]');
  if (!render || !root || !Number.isInteger(treeSeq)) return;
  const base = root.dataset.pointer;
  const stale = () => stateTree.dataset.render !== render;
  let missing = unblamedLeaves();
  const pointers = (leaves) => leaves.map((leaf) => leaf.dataset.pointer);
  const stages = [
    () => [base],
    (leaves) => [...new Set(pointers(leaves).map(parentOf))].filter((p) => p.length > base.length).slice(0, MAX_CONTAINERS),
    (leaves) => pointers(leaves).slice(0, MAX_LEAVES),
  ];
  const answers = [];
  try {
    for (const paths of stages) {
      if (!missing.length) return;
      const asked = paths(missing);
      if (!asked.length) continue;
      answers.push(...await Promise.all(asked.map((path) => blameOf(treeSeq, path))));
      if (stale()) return;
      missing = annotate(missing, answers, treeSeq);
    }
  } catch (err) {
    if (!stale()) reportError(`blame at seq ${treeSeq}`, err);
  }
}

/** After the tree was rendered anew (another seq or node): blame once the slider rests. */
export const scheduleBlame = debounce(() => { void blameTree(); }, BLAME_DEBOUNCE_MS, 1000);
