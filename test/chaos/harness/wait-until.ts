/** Polls every 100 ms until `check` returns null; otherwise fails with its last answer. */
export async function until(
  what: string,
  check: () => Promise<string | null>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const problem = await check();
      if (problem === null) return;
      last = problem;
    } catch (error) {
      last = String(error);
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
