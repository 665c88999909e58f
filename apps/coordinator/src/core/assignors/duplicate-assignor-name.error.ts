/**
 * Two assignors were registered under the same name.
 *
 * @publicApi
 */
export class DuplicateAssignorNameError extends Error {
  override readonly name = 'DuplicateAssignorNameError';

  constructor(readonly assignorName: string) {
    super(`two assignors are named "${assignorName}"; give the custom assignor another name`);
  }
}
