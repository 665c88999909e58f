/** A chaos-suite setting in the environment has a value the harness cannot use. */
export class ChaosConfigError extends Error {
  override readonly name = 'ChaosConfigError';

  constructor(variable: string, value: string, expected: string) {
    super(`${variable}=${JSON.stringify(value)} is not valid: expected ${expected}`);
  }
}
