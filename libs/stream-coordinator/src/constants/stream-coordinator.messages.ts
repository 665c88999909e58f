/**
 * Message factories of the module's errors, so every message follows one format and tests can
 * compare against the same text. Each message says what was wrong and how to fix it.
 *
 * @internal
 */

/**
 * One problem found in a set of options (see `InvalidModuleOptionsError.issues`).
 *
 * @publicApi
 */
export interface OptionIssue {
  /** Dotted path of the option (`handlerDefaults.batchSize`); empty for the options object. */
  readonly path: string;
  /** What the value must be, or what is wrong with it (`must be an integer between 1 and 10000`). */
  readonly problem: string;
  /** The offending value, already rendered for a message (`0`, `"abc"`, `undefined`). */
  readonly received: string | undefined;
  /** How to fix it, when more than `problem` says. */
  readonly hint?: string;
}

const MODULE = 'StreamCoordinatorModule';

/** Renders one issue without a prefix: `option "x" must be … (got …); hint`. @internal */
export function describeOptionIssue(issue: OptionIssue): string {
  const subject = issue.path === '' ? 'options' : `option "${issue.path}"`;
  const got = issue.received === undefined ? '' : ` (got ${issue.received})`;
  const hint = issue.hint === undefined ? '' : `; ${issue.hint}`;
  return `${subject} ${issue.problem}${got}${hint}`;
}

/** Renders several issues: the first, then the others after `also:`. @internal */
function describeOptionIssues(issues: readonly OptionIssue[]): string {
  const [first, ...rest] = issues;
  if (first === undefined) return 'options are invalid';
  const also = rest.length === 0 ? '' : `; also: ${rest.map(describeOptionIssue).join('; ')}`;
  return `${describeOptionIssue(first)}${also}`;
}

/** `StreamCoordinatorModule: option "handlerDefaults.batchSize" must be … (got 0)`. @internal */
export const INVALID_MODULE_OPTIONS = (issues: readonly OptionIssue[]): string =>
  `${MODULE}: ${describeOptionIssues(issues)}`;

/** An invalid `@StreamShardHandler` (bad stream name or options, or misuse). @internal */
export const INVALID_STREAM_HANDLER = (className: string, memberName: string, reason: string) =>
  `@StreamShardHandler on ${memberName === '' ? className : `${className}.${memberName}`}: ${reason}`;

/** Reason: the handler's options are invalid. @internal */
export const INVALID_HANDLER_OPTIONS = (issues: readonly OptionIssue[]): string =>
  describeOptionIssues(issues);

/** Reason: the decorator was put on something that is not an instance method. @internal */
export const NOT_A_METHOD = (kind: 'property' | 'class' | 'static method' | 'accessor'): string =>
  `the decorator applies to instance methods only, but was applied to ${kind === 'accessor' ? 'an' : 'a'} ${kind}; move it to a method of an @Injectable() provider or a controller`;

/**
 * Reason: `@ExactlyOnce()` on a handler whose entries of one shard do not settle in id order (the
 * offsets row records the last applied id of a shard, so a later id settling first would make an
 * earlier one look applied). @internal
 */
export const EXACTLY_ONCE_NEEDS_SHARD_ORDER = (
  option: 'ordering' | 'batch',
  declared = '@ExactlyOnce()',
): string =>
  option === 'ordering'
    ? `has ${declared} with ordering "key": exactly-once records the last applied entry id per shard, so entries of one shard must settle in id order; use ordering "shard" (the default)`
    : `has ${declared} on a batch handler: exactly-once applies one entry per transaction; drop \`batch\` or write the batch in your own transaction`;

/** Reason: a non-singleton host the library cannot build per message. @internal */
export const NON_STATIC_HOST = (className: string, scope: string): string =>
  `${className} is ${scope}, and its instance cannot be built per message (its module was not ` +
  `found, or it is not a class provider); provide ${className} as a class in a module, or move ` +
  'the handler to a singleton provider';

/** Reason: a parameter uses a decorator the library cannot supply. @internal */
export const UNSUPPORTED_PARAMETER = (index: number): string =>
  `parameter ${index} has a parameter decorator the library cannot fill (such as @Query() or @Ctx()); ` +
  'use @ShardMessage(), @ShardContext() or a custom decorator made with createParamDecorator()';

/** Reason: the stream name breaks the name rule. @internal */
export const INVALID_STREAM_NAME = (received: string): string =>
  `the stream name must be a name of 1–128 characters from [A-Za-z0-9._-] (got ${received})`;

/** Reason: the method carries two `@StreamShardHandler` decorators. @internal */
export const DOUBLE_DECORATION = (first: string, second: string): string =>
  `the method has two @StreamShardHandler decorators ("${first}" and "${second}"); a method handles one stream`;

/** Reason: a parameter decorator was put on a constructor parameter. @internal */
export const NOT_A_HANDLER_PARAMETER = (decorator: string): string =>
  `${decorator} applies to parameters of a @StreamShardHandler method, not to constructor parameters`;

/** Reason: a parameter has both `@ShardMessage()` and `@ShardContext()`. @internal */
export const CONFLICTING_PARAMETER = (index: number): string =>
  `parameter ${index} has both @ShardMessage() and @ShardContext(); keep one`;

/** Two handlers for one stream. @internal */
export const DUPLICATE_STREAM_HANDLER = (stream: string, first: string, second: string): string =>
  `Stream "${stream}" has two @StreamShardHandler methods: ${first} and ${second}. ` +
  'An application has exactly one handler per stream; remove one or merge them.';

/** A guard denied a message. @internal */
export const FORBIDDEN_HANDLER = (stream: string, handler: string, messageId: string): string =>
  `A guard of ${handler} denied message ${messageId} of stream "${stream}"; ` +
  'the handler did not run and the message is dead-lettered at once (a denial is not retried; ' +
  'a guard that may admit it later should throw a retryable error instead of returning false)';

/** An exception filter returned an Observable that completed without a value. @internal */
export const EMPTY_FILTER_RESULT = (
  stream: string,
  handler: string,
  messageId: string,
  cause: string | undefined,
): string =>
  `An exception filter of ${handler} returned an Observable that completed without a value for ` +
  `message ${messageId} of stream "${stream}"${cause === undefined ? '' : ` (the handler failed: ${cause})`}, ` +
  'so the failure is not handled and the message is retried, then dead-lettered; ' +
  'return of(value) to mark it handled, or throwError(() => exception) to fail it';

/** An `@EventPattern` handler's result completed without a value. @internal */
export const EMPTY_EVENT_RESULT = (stream: string, messageId: string): string =>
  `The @EventPattern handler of stream "${stream}" ended message ${messageId} with an Observable ` +
  "that completed without a value (its own, or an exception filter's such as return EMPTY), " +
  'so it is not handled and the message is retried, then dead-lettered (as with ServerKafka); ' +
  'return or emit a value, such as of(null), to mark it handled';
