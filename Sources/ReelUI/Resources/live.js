/*
 * reel ui — live updates: the WebSocket pushes {"seq": N} whenever the latest seq changes;
 * it is redialled with a backoff when it closes.
 */

import { $ } from './util.js';
import { TOKEN } from './api.js';
import { onLatest } from './travel.js';
import { S } from './state.js';

const badgeEl = $('mode-badge');

let liveDelay = 1000;
let liveTimer = 0;

export function connectLive() {
  clearTimeout(liveTimer);
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = `${scheme}//${location.host}/api/live${TOKEN ? `?token=${encodeURIComponent(TOKEN)}` : ''}`;
  let socket;
  try {
    socket = new WebSocket(url);
  } catch (err) {
    scheduleReconnect();
    return;
  }
  let openedAt = 0;
  socket.addEventListener('open', () => {
    openedAt = Date.now();
    badgeEl.classList.add('connected');
  });
  socket.addEventListener('message', (event) => {
    let message = null;
    try { message = JSON.parse(event.data); } catch (err) { return; }
    // The feed is the main history's: on a branch, its seqs are not the ones shown.
    if (message && Number.isFinite(message.seq) && !S.branch) onLatest(message.seq);
  });
  // An error is always followed by close, where the reconnect is scheduled.
  socket.addEventListener('error', () => {});
  socket.addEventListener('close', () => {
    badgeEl.classList.remove('connected');
    // Only a connection that lived a while resets the backoff: a source that closes at once
    // (offline, nothing to push) must not be redialled every second.
    if (openedAt && Date.now() - openedAt > 10000) liveDelay = 1000;
    scheduleReconnect();
  });
}

/** Backoff 1 s, 2 s, 4 s … 30 s; an offline source may close at once, so it waits longest. */
function scheduleReconnect() {
  clearTimeout(liveTimer);
  liveTimer = setTimeout(connectLive, liveDelay);
  liveDelay = Math.min(liveDelay * 2, 30000);
}
