/**
 * Polls `probe` until it returns no problems (an empty list), or throws after `timeoutMs` with the
 * last problems found, so a failed wait says what was still wrong.
 */
export async function waitUntil(
  what: string,
  probe: () => Promise<readonly string[]> | readonly string[],
  timeoutMs: number,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let problems: readonly string[] = [];
  for (;;) {
    try {
      problems = await probe();
    } catch (error) {
      problems = [`probe failed: ${String(error)}`];
    }
    if (problems.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `${what}: not reached within ${timeoutMs} ms:\n  ${problems.slice(0, 20).join('\n  ')}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Resolves after `ms` (only where a fixed duration is the point, e.g. an outage of a given length). */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
