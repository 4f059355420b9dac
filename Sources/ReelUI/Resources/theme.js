/*
 * reel ui — the theme: the stored choice, else the system's; data-theme on <html> drives the
 * CSS variables.
 */

import { $ } from './util.js';

const THEME_KEY = 'reel-ui-theme';

const themeBtn = $('theme-toggle');

const darkQuery = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

function storedTheme() {
  try {
    const value = localStorage.getItem(THEME_KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch (err) {
    return null; // storage disabled: follow the system
  }
}

function applyTheme(theme) {
  document.documentElement.setAttribute('data-theme', theme);
  const next = theme === 'dark' ? 'light' : 'dark';
  themeBtn.textContent = theme === 'dark' ? '☀ Light' : '☾ Dark';
  themeBtn.setAttribute('aria-label', `Switch to the ${next} theme (t)`);
}

export function initTheme() {
  applyTheme(storedTheme() || (darkQuery && darkQuery.matches ? 'dark' : 'light'));
  if (!darkQuery) return;
  const follow = () => { if (!storedTheme()) applyTheme(darkQuery.matches ? 'dark' : 'light'); };
  if (darkQuery.addEventListener) darkQuery.addEventListener('change', follow);
  else if (darkQuery.addListener) darkQuery.addListener(follow);
}

export function toggleTheme() {
  const next = document.documentElement.getAttribute('data-theme') === 'dark' ? 'light' : 'dark';
  try { localStorage.setItem(THEME_KEY, next); } catch (err) { /* not persisted; still applied */ }
  applyTheme(next);
}
