/**
 * What a batch invocation resolves to when interceptors reshaped the method's result: the
 * chain's result, with every `batchItemFailures` entry the method itself reported kept.
 *
 * A response wrapper (`map(data => ({ data }))`) or a fallback (`of(null)`) at the outer end of
 * the chain would otherwise hide the method's failures, and those messages would be acked: a
 * failure acked. Interceptors may add failures (theirs come first, so an error they reworded
 * wins for the same message) but not remove ones the method reported.
 *
 * @internal
 */
export function withReportedFailures(chainResult: unknown, methodResult: unknown): unknown {
  const own = failuresOf(methodResult);
  if (own === undefined || own.length === 0) return chainResult;
  const chain = failuresOf(chainResult);
  if (chain === own) return chainResult;
  if (chain === undefined) return { batchItemFailures: own };
  return { ...(chainResult as object), batchItemFailures: [...chain, ...own] };
}

function failuresOf(result: unknown): readonly unknown[] | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const failures = (result as { batchItemFailures?: unknown }).batchItemFailures;
  return Array.isArray(failures) ? failures : undefined;
}
