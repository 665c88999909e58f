/**
 * The example producer's environment is invalid; the message lists every problem, each naming
 * the variable and what it must look like.
 */
export class InvalidProducerConfigError extends Error {
  override readonly name = 'InvalidProducerConfigError';

  constructor(readonly problems: readonly string[]) {
    super(`invalid example-producer configuration:\n  - ${problems.join('\n  - ')}`);
  }
}
