import { DuplicateAssignorNameError } from './duplicate-assignor-name.error.js';
import { InvalidAssignorNameError } from './invalid-assignor-name.error.js';
import { RangeAssignor } from './range.assignor.js';
import type { ShardAssignor } from './shard-assignor.interface.js';
import { UniformAssignor } from './uniform.assignor.js';

/**
 * Name of the assignor a group uses when no member asks for one (`uniform`).
 *
 * @publicApi
 */
export const DEFAULT_ASSIGNOR_NAME = UniformAssignor.NAME;

/**
 * Names of the built-in assignors, the default first (Kafka's `group.consumer.assignors` default
 * order).
 *
 * @publicApi
 */
export const BUILTIN_ASSIGNOR_NAMES: readonly string[] = [UniformAssignor.NAME, RangeAssignor.NAME];

/**
 * Fresh instances of the built-in assignors, the default first. They are stateless, so one set can
 * serve every group.
 *
 * @publicApi
 */
export function createBuiltinAssignors(): ShardAssignor[] {
  return [new UniformAssignor(), new RangeAssignor()];
}

const VALID_NAME = /^[\x20-\x7e]{1,255}$/;

/**
 * The built-in assignors followed by `custom` ones, keyed by name (insertion order: built-ins first,
 * the default first), ready for `CoordinatorRules.assignors`.
 *
 * @throws InvalidAssignorNameError when a name is not 1–255 printable ASCII characters.
 * @throws DuplicateAssignorNameError when two assignors share a name (custom ones cannot replace a
 *   built-in).
 * @publicApi
 */
export function assignorRegistry(
  custom: readonly ShardAssignor[] = [],
): Map<string, ShardAssignor> {
  const registry = new Map<string, ShardAssignor>();
  for (const assignor of [...createBuiltinAssignors(), ...custom]) {
    if (!VALID_NAME.test(assignor.name)) throw new InvalidAssignorNameError(assignor.name);
    if (registry.has(assignor.name)) throw new DuplicateAssignorNameError(assignor.name);
    registry.set(assignor.name, assignor);
  }
  return registry;
}
