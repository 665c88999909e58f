import {
  INVALID_MODULE_OPTIONS,
  type OptionIssue,
} from '../constants/stream-coordinator.messages.js';
import { StreamCoordinatorError } from './stream-coordinator.error.js';

export type { OptionIssue } from '../constants/stream-coordinator.messages.js';

/**
 * The module options are invalid (wrong value, unknown key, missing token, …). Thrown at
 * bootstrap by `forRoot` and `forRootAsync` alike. The message names the first option at fault,
 * what it must be and what was given; `issues` lists every problem found.
 *
 * @publicApi
 */
export class InvalidModuleOptionsError extends StreamCoordinatorError {
  override name = 'InvalidModuleOptionsError';
  /** Path of the first option at fault (`handlerDefaults.batchSize`); empty for the whole object. */
  readonly optionPath: string;

  constructor(readonly issues: readonly OptionIssue[]) {
    super(INVALID_MODULE_OPTIONS(issues));
    this.optionPath = issues[0]?.path ?? '';
  }
}
