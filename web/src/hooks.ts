import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { isAbort } from "./api.ts";
import { noteWatching } from "./session.ts";

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again (keeps the current data on screen meanwhile). */
  reload: () => void;
}

/**
 * Runs `load` when `deps` change and on reload(); an older answer arriving late is dropped, and
 * the request is aborted when the component goes away.
 */
export function useApi<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    const controller = new AbortController();
    setLoading(true);
    loadRef.current(controller.signal).then(
      (value) => {
        if (controller.signal.aborted) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (err: unknown) => {
        if (controller.signal.aborted || isAbort(err)) return;
        setError(err);
        setLoading(false);
      },
    );
    return () => controller.abort();
    // The caller's deps are the dependency list (load is read through a ref).
  }, [...deps, tick]);

  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data, error, loading, reload };
}

/**
 * Calls `fn` every `ms` while `active`, and not while the tab is hidden. Each call made counts as
 * the user's presence for the session (session.ts noteWatching): a page on screen that keeps
 * updating (a running task's progress) is being watched, and must not end in "session expired".
 */
export function useInterval(fn: () => void, ms: number, active: boolean): void {
  const fnRef = useRef(fn);
  fnRef.current = fn;
  useEffect(() => {
    if (!active) return;
    const id = window.setInterval(() => {
      if (document.visibilityState !== "visible") return;
      noteWatching();
      fnRef.current();
    }, ms);
    return () => window.clearInterval(id);
  }, [ms, active]);
}

let announcer: ((message: string) => void) | null = null;

/** Registers the live region (app shell). */
export function setAnnouncer(fn: ((message: string) => void) | null): void {
  announcer = fn;
}

/** Says `message` through the page's aria-live region (screen readers read it once). */
export function announce(message: string): void {
  announcer?.(message);
}

/** Sets the document title for the page. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · mailprobe`;
  }, [title]);
}

export interface Action {
  busy: boolean;
  error: unknown;
  setError: (error: unknown) => void;
  /** Runs the action (a form's submit event is prevented first); its error is kept for the form to show. */
  run: (e?: Event) => Promise<void>;
}

/**
 * A button's or form's one action: busy while it runs (the button disabled, so a double click
 * sends one request) and the last error kept until the next try.
 */
export function useAction(action: () => Promise<void>): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  async function run(e?: Event): Promise<void> {
    e?.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, setError, run };
}
