/*
 * reel ui — the shared state: one object every module reads and writes (the DOM is derived
 * from it), and the accessors that map the log's rows to seqs.
 */

import { clamp } from './util.js';

/** Everything the page knows; the DOM is derived from it. */
export const S = {
  info: null,
  latest: 0,          // the latest seq
  origin: 0,          // the seq the history starts after: 0, or a bundle's first state (/api/info)
  branch: null,       // the branch shown (branches.js), null for the main history
  current: 0,         // the seq being looked at (the origin: the state the history starts from)
  view: null,         // null: the whole log (row i is seq origin+i+1); else the ascending seqs matching the filters
  cache: new Map(),   // seq -> envelope
  skipped: new Set(), // seqs skipped in the what-if replay
  markA: null,
  markB: null,
  pointer: '',        // the JSON Pointer applied to the state tree
  changed: null,      // null, or the JSON Pointer the log is filtered by: only the actions that changed the value there
};

/** The number of rows of the log: every seq, or only those matching the filters. */
export const rowCount = () => (S.view ? S.view.length : S.latest - S.origin);
export const seqAt = (i) => (S.view ? S.view[i] : S.origin + i + 1);

/** Index of the first row whose seq is >= seq (rowCount() when there is none). */
export function lowerIndex(seq) {
  if (!S.view) return clamp(seq - S.origin - 1, 0, S.latest - S.origin);
  let lo = 0;
  let hi = S.view.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (S.view[mid] < seq) lo = mid + 1; else hi = mid;
  }
  return lo;
}
