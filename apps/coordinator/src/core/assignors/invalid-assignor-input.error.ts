/**
 * Thrown by a built-in assignor when its `AssignorInput` breaks the shape the interface documents
 * (a member stored under another id, shard ids that are not strictly ascending non-negative
 * integers). It signals a coordinator bug, never a member's mistake: the coordinator builds the
 * input itself.
 *
 * @publicApi
 */
export class InvalidAssignorInputError extends Error {
  override readonly name = 'InvalidAssignorInputError';

  constructor(
    /** Name of the assignor that refused the input. */
    readonly assignor: string,
    detail: string,
  ) {
    super(`assignor ${assignor}: invalid input: ${detail}`);
  }
}
