/**
 * A publish call was given something it cannot write (the message names the argument).
 *
 * @publicApi
 */
export class PublishArgumentError extends TypeError {
  override readonly name = 'PublishArgumentError';
}
