/**
 * An assignor's name is not 1–255 printable ASCII characters (the rule for the heartbeat's
 * `assignor` field).
 *
 * @publicApi
 */
export class InvalidAssignorNameError extends Error {
  override readonly name = 'InvalidAssignorNameError';

  constructor(readonly assignorName: string) {
    super(
      `assignor name ${JSON.stringify(assignorName)} is invalid: use 1-255 printable ASCII characters`,
    );
  }
}
