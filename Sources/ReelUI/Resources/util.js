/*
 * reel ui — small helpers shared by every module: element creation, debouncing, formatting.
 * This module imports nothing, so it is always initialised before the modules that use it.
 */

export const $ = (id) => document.getElementById(id);

/** Creates an element with an optional class and text (text, never HTML: values are untrusted). */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/**
 * A trailing-edge debounce with cancel(). With `maxWait`, a steady stream of calls (a slider
 * being dragged, a busy live store) still runs `fn` at least that often instead of starving it.
 */
export function debounce(fn, ms, maxWait) {
  let timer = 0;
  let firstCall = 0;
  const run = (args) => {
    firstCall = 0;
    fn(...args);
  };
  const wrapped = (...args) => {
    clearTimeout(timer);
    const now = Date.now();
    if (!firstCall) firstCall = now;
    if (maxWait && now - firstCall >= maxWait) {
      run(args);
      return;
    }
    timer = setTimeout(() => run(args), ms);
  };
  wrapped.cancel = () => {
    clearTimeout(timer);
    firstCall = 0;
  };
  return wrapped;
}

/** Like debounce, but a call after a quiet spell of `ms` runs at once: one step or one click
 *  on the slider shows its state without waiting, a drag still coalesces. */
export function leadingDebounce(fn, ms, maxWait) {
  let lastRun = 0;
  const trailing = debounce((...args) => { lastRun = Date.now(); fn(...args); }, ms, maxWait);
  return (...args) => {
    const now = Date.now();
    if (now - lastRun > ms) {
      trailing.cancel();
      lastRun = now;
      fn(...args);
    } else {
      trailing(...args);
    }
  };
}

export const clamp = (n, lo, hi) => Math.min(hi, Math.max(lo, n));
export const fmtInt = (n) => Number(n).toLocaleString('en-US');
export const plural = (n, word) => `${fmtInt(n)} ${word}${n === 1 ? '' : 's'}`;
export const errMessage = (err) => (err && err.message ? err.message : String(err));

/** Compact JSON, cut to `max` characters for previews. */
export function compactJSON(value, max) {
  let text;
  try { text = JSON.stringify(value); } catch (err) { text = String(value); }
  if (text === undefined) text = '';
  return max && text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function prettyJSON(value) {
  try {
    const text = JSON.stringify(value, null, 2);
    return text === undefined ? '' : text;
  } catch (err) {
    return String(value);
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const HALF_YEAR_MS = 183 * 86400000;

/**
 * An ISO time in a log row's few characters, in UTC as `reel log` prints it: "09:26:53" today,
 * "Mar 14 09:26" on another day of the last six months, "Mar 14 2025" before (as `ls -l` does),
 * so an action of another day never passes for today's; the row's tooltip has the full time.
 * Read from the text itself: the fraction may have 9 digits, which Date.parse does not accept
 * everywhere.
 */
export function shortTime(time, now = new Date()) {
  const match = typeof time === 'string' ? /^(\d{4})-(\d{2})-(\d{2})T(\d{2}:\d{2}):(\d{2})/.exec(time) : null;
  if (!match) return '';
  const [, year, month, day, hhmm, ss] = match;
  if (`${year}-${month}-${day}` === now.toISOString().slice(0, 10)) return `${hhmm}:${ss}`;
  const date = `${MONTHS[Number(month) - 1]} ${day}`;
  const age = now.getTime() - Date.UTC(Number(year), Number(month) - 1, Number(day));
  return age > 0 && age < HALF_YEAR_MS ? `${date} ${hhmm}` : `${date} ${year}`;
}

/** A non-negative integer typed by the user, or null. */
export function parseSeq(text) {
  const trimmed = String(text).trim();
  return /^\d+$/.test(trimmed) ? Number(trimmed) : null;
}
