import type { InvariantName, InvariantResult } from './invariant-report.types.js';

/** Collects the violations (and counted notes) of one invariant. */
export class ViolationLog {
  private readonly kinds: Record<string, number> = {};
  private readonly counted: Record<string, number> = {};
  private readonly listed: string[] = [];
  private total = 0;

  constructor(
    private readonly name: InvariantName,
    private readonly title: string,
    private readonly maxExamples: number,
  ) {}

  /** Records a violation of `kind`; `describe` runs only for the listed examples. */
  add(kind: string, describe: () => string): void {
    this.total++;
    this.kinds[kind] = (this.kinds[kind] ?? 0) + 1;
    if (this.listed.length < this.maxExamples) this.listed.push(`${kind}: ${describe()}`);
  }

  /** Counts a fact that is not a violation. */
  note(kind: string, by = 1): void {
    this.counted[kind] = (this.counted[kind] ?? 0) + by;
  }

  /** The verdict. */
  result(checked: number, basis: string): InvariantResult {
    return {
      name: this.name,
      title: this.title,
      ok: this.total === 0,
      checked,
      violations: this.total,
      byKind: { ...this.kinds },
      notes: { ...this.counted },
      examples: [...this.listed],
      basis,
    };
  }
}
