/** BENCH_SHAPES named a case that does not exist. */
export class UnknownHandlerShapeError extends Error {
  override readonly name = 'UnknownHandlerShapeError';
  constructor(term: string, names: readonly string[]) {
    super(
      `BENCH_SHAPES: "${term}" matches no handler shape; the shapes are: ${names.map((n) => `"${n}"`).join(', ')}`,
    );
  }
}

/**
 * The shapes a BENCH_SHAPES filter selects: comma-separated terms, each matching every shape
 * whose name contains it (case-insensitive); unset or blank selects all. The order stays the
 * shapes' order.
 *
 * @throws UnknownHandlerShapeError when a term matches no shape (nothing is run then).
 */
export function selectShapes<T extends { readonly name: string }>(
  shapes: readonly T[],
  filter: string | undefined,
): readonly T[] {
  const terms = (filter ?? '')
    .split(',')
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t.length > 0);
  if (terms.length === 0) return shapes;
  for (const term of terms) {
    if (!shapes.some((s) => s.name.toLowerCase().includes(term)))
      throw new UnknownHandlerShapeError(
        term,
        shapes.map((s) => s.name),
      );
  }
  return shapes.filter((s) => terms.some((t) => s.name.toLowerCase().includes(t)));
}
