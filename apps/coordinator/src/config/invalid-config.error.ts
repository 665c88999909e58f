/** The coordinator's environment is invalid; the message lists every problem and how to fix it. */
export class InvalidConfigError extends Error {
  override readonly name = 'InvalidConfigError';

  constructor(readonly problems: readonly string[]) {
    super(`invalid coordinator configuration:\n  - ${problems.join('\n  - ')}`);
  }
}
