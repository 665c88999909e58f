import { describe, expect, it } from 'vitest';
import { EMPTY_ASSIGNMENT } from '../assignment.js';
import {
  assignorRegistry,
  BUILTIN_ASSIGNOR_NAMES,
  createBuiltinAssignors,
  DEFAULT_ASSIGNOR_NAME,
} from './builtin-assignors.js';
import { DuplicateAssignorNameError } from './duplicate-assignor-name.error.js';
import * as barrel from './index.js';
import { InvalidAssignorNameError } from './invalid-assignor-name.error.js';
import type { ShardAssignor } from './shard-assignor.interface.js';

const custom = (name: string): ShardAssignor => ({
  name,
  assign: (input) => new Map([...input.members.keys()].map((id) => [id, EMPTY_ASSIGNMENT])),
});

describe('built-in assignors', () => {
  it('are uniform (the default) then range', () => {
    expect(DEFAULT_ASSIGNOR_NAME).toBe('uniform');
    expect(BUILTIN_ASSIGNOR_NAMES).toEqual(['uniform', 'range']);
    expect(createBuiltinAssignors().map((a) => a.name)).toEqual(['uniform', 'range']);
  });

  it('creates fresh instances each time', () => {
    const [a] = createBuiltinAssignors();
    const [b] = createBuiltinAssignors();
    expect(a).not.toBe(b);
  });

  it('registry: built-ins first, then custom ones, keyed by name', () => {
    const registry = assignorRegistry([custom('sticky-racks')]);
    expect([...registry.keys()]).toEqual(['uniform', 'range', 'sticky-racks']);
    expect(registry.get('sticky-racks')?.name).toBe('sticky-racks');
  });

  it('registry refuses a custom assignor that reuses a name', () => {
    expect(() => assignorRegistry([custom('range')])).toThrow(DuplicateAssignorNameError);
    expect(() => assignorRegistry([custom('x'), custom('x')])).toThrow(
      /two assignors are named "x"/,
    );
  });

  it('registry refuses names that are not 1-255 printable ASCII characters', () => {
    for (const bad of ['', 'a'.repeat(256), 'tab\there', 'é']) {
      expect(() => assignorRegistry([custom(bad)]), JSON.stringify(bad)).toThrow(
        InvalidAssignorNameError,
      );
    }
    expect(() => assignorRegistry([custom('a'.repeat(255))])).not.toThrow();
  });

  it('the barrel exports the public API', () => {
    expect(Object.keys(barrel).sort()).toEqual(
      [
        'BUILTIN_ASSIGNOR_NAMES',
        'DEFAULT_ASSIGNOR_NAME',
        'DuplicateAssignorNameError',
        'InvalidAssignorInputError',
        'InvalidAssignorNameError',
        'RangeAssignor',
        'UniformAssignor',
        'assignorRegistry',
        'compareRangeOrder',
        'createBuiltinAssignors',
      ].sort(),
    );
  });
});
