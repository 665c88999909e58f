import type { ChildProcess } from 'node:child_process';

// What a test server started behind a watchdog script needs (redis-server-process.ts,
// postgres-server-process.ts): the script prints the server's pid as its first line.

/** The pid the watchdog script prints first; `undefined` when it exits before printing one. */
export function readPid(child: ChildProcess, exited: Promise<void>): Promise<number | undefined> {
  return new Promise((resolve) => {
    let out = '';
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      const newline = out.indexOf('\n');
      if (newline < 0) return;
      child.stdout?.off('data', onData);
      child.stdout?.resume(); // keep draining (the servers log to their own files)
      const pid = Number(out.slice(0, newline).trim());
      resolve(Number.isInteger(pid) && pid > 0 ? pid : undefined);
    };
    child.stdout?.on('data', onData);
    void exited.then(() => resolve(undefined));
  });
}

/** Whether `promise` settles within `ms`. */
export async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Signals `pid`, ignoring a process that is already gone. */
export function killQuietly(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}
