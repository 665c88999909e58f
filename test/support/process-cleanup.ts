/**
 * Last-resort cleanup for whatever the test helpers start: synchronous callbacks run when this
 * process exits, receives SIGINT/SIGTERM/SIGHUP, or (in a Vitest fork worker) loses its IPC
 * channel because the test runner died; a killed runner leaves its workers orphaned but alive.
 * Helpers still stop their processes explicitly (`afterAll`); this only catches what is left.
 */

/** Removes a callback registered with {@link onProcessExit}. */
export type Unregister = () => void;

const callbacks = new Set<() => void>();
let installed = false;
const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Registers `callback` (synchronous: kill a pid, remove a directory) to run once at process exit
 * or on a terminating signal. Returns the function that unregisters it.
 */
export function onProcessExit(callback: () => void): Unregister {
  install();
  callbacks.add(callback);
  return () => {
    callbacks.delete(callback);
  };
}

/** Runs and forgets every registered callback now (errors are swallowed: best effort). */
export function runExitCallbacks(): void {
  for (const callback of callbacks) {
    callbacks.delete(callback);
    try {
      callback();
    } catch {
      // best effort: the process is going away
    }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runExitCallbacks);
  if (process.connected) process.once('disconnect', runExitCallbacks);
  for (const signal of SIGNALS) {
    const handler = (): void => {
      runExitCallbacks();
      process.off(signal, handler);
      // Keep the signal's effect: if nobody else handles it, re-raise it for the default action.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}
