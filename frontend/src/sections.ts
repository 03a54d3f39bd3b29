// Which dashboard sections the user folded (ours): kept in localStorage per browser, the
// same for every run, so a folded "Training" stays folded on the next run page too.

export const COLLAPSED_KEY = "umbra.dashboard.collapsed";

/** The part of `Storage` used here (so tests pass a Map-backed fake). */
export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** The folded sections stored in `store` (none if absent or unreadable). */
export function loadCollapsed(store: KeyValueStore | null): Set<string> {
  try {
    const parsed: unknown = JSON.parse(store?.getItem(COLLAPSED_KEY) ?? "[]");
    return new Set(Array.isArray(parsed) ? parsed.filter((s): s is string => typeof s === "string") : []);
  } catch {
    return new Set();
  }
}

/** Fold or unfold `section` and store the result; returns the new set. */
export function setCollapsed(store: KeyValueStore | null, section: string, collapsed: boolean): Set<string> {
  const current = loadCollapsed(store);
  if (collapsed) current.add(section);
  else current.delete(section);
  try {
    store?.setItem(COLLAPSED_KEY, JSON.stringify([...current].sort()));
  } catch {
    // private mode or full storage: the fold holds for this page only
  }
  return current;
}

/** `localStorage`, or null where the browser refuses it. */
export function browserStore(): KeyValueStore | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}
