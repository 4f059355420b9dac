/*
 * reel ui — access to the JSON API and the status line.
 *
 * The API (described in the docs): GET /api/info, /api/history, /api/search, /api/actions,
 * /api/state, /api/show, /api/diff, /api/shadow; POST /api/call/METHOD (any read method of the protocol:
 * the page calls describe, find and blame so), /api/whatif, /api/bisect, /api/dispatch,
 * /api/revert; GET /api/export; WS /api/live. /api/history and /api/search take `changed`, a
 * JSON Pointer: only the actions that changed the value there.
 */

import { $, errMessage } from './util.js';
import { S } from './state.js';

/** The token of the URL `reel ui` printed: sent as a bearer token, and to the WebSocket. */
export const TOKEN = new URLSearchParams(location.search).get('token') || '';

const statusEl = $('status');

/** The reads that follow the branch shown. */
const BRANCH_READS = new Set(['/api/history', '/api/search', '/api/actions', '/api/state', '/api/show', '/api/diff']);

export class ApiError extends Error {
  constructor(message, status, code) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/**
 * GET `path` with `params`, or POST `body` as JSON when given. Resolves to the parsed JSON;
 * rejects with an ApiError carrying the API's own error message. The cookie set when the page
 * was loaded authenticates; the bearer token is sent too, in case the cookie was refused.
 */
export async function api(path, params, body) {
  const query = new URLSearchParams();
  // On a branch, the reads of the log and the state are the branch's (`branch: ''` asks for the
  // main history's).
  if (S.branch && BRANCH_READS.has(path) && !(params && 'branch' in params)) query.set('branch', S.branch);
  if (params) {
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined && value !== null && value !== '') query.set(key, String(value));
    }
  }
  const qs = query.toString();
  const url = qs ? `${path}?${qs}` : path;
  const headers = { Accept: 'application/json' };
  if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
  const init = { headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    init.method = 'POST';
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  let text;
  try {
    response = await fetch(url, init);
    text = await response.text();
  } catch (err) {
    throw new ApiError(`cannot reach reel ui (${errMessage(err)})`, 0, 0);
  }
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch (err) { data = null; }
  }
  if (!response.ok) {
    const error = data && typeof data === 'object' ? data.error : null;
    const message = error && typeof error.message === 'string'
      ? error.message
      : (text && text.length < 300 ? text.trim() : `HTTP ${response.status}`);
    throw new ApiError(message, response.status, error && error.code !== undefined ? error.code : response.status);
  }
  if (data === null || typeof data !== 'object') throw new ApiError(`unexpected answer from ${path}`, response.status, 0);
  return data;
}

export function setStatus(message, isError) {
  statusEl.textContent = message;
  statusEl.classList.toggle('error', Boolean(isError));
}

/** Shows a failed request in the status line: what was being done, then the API's message. */
export function reportError(context, err) {
  setStatus(`${context}: ${errMessage(err)}`, true);
}
