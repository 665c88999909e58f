/**
 * A key of the current layout already holds something else than the old key the migration would
 * move onto it: a coordinator of an older version wrote the old layout again after a move (or both
 * versions ran at once). The migration moves nothing rather than overwrite current state.
 */
export class KeyLayoutConflictError extends Error {
  override readonly name = 'KeyLayoutConflictError';

  constructor(readonly conflicts: readonly string[]) {
    super(
      `both key layouts hold different state for ${conflicts.length} key(s), nothing was moved: ` +
        `${conflicts.join('; ')}. The current layout's keys are what the coordinators of this ` +
        'version serve. Stop every coordinator of an older version, check and delete the old ' +
        'keys listed (what that coordinator wrote since the move), and run migrate-keys again ' +
        '(docs/operations.md, "Moving to the current key layout").',
    );
  }
}
