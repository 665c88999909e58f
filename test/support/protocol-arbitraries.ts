import fc from 'fast-check';
import type { Op, RunConfig, ZombieKind } from './protocol-model.js';

/** fast-check arbitraries for the core's protocol property tests (see `protocol-model.ts`). */

/** A group: 1–3 streams of 0–24 shards (or not created yet), 1–8 member slots. */
export const configArb: fc.Arbitrary<RunConfig> = fc.record({
  streamCount: fc.integer({ min: 1, max: 3 }),
  initialShards: fc.array(
    fc.oneof(
      { arbitrary: fc.integer({ min: 0, max: 24 }), weight: 5 },
      { arbitrary: fc.constant(-1), weight: 1 },
    ),
    {
      minLength: 3,
      maxLength: 3,
    },
  ),
  slots: fc.array(fc.record({ isStatic: fc.boolean(), mask: fc.integer({ min: 1, max: 7 }) }), {
    minLength: 1,
    maxLength: 8,
  }),
  homogeneous: fc.boolean(),
  groupMaxSize: fc.oneof(
    { arbitrary: fc.constant(100), weight: 4 },
    { arbitrary: fc.integer({ min: 2, max: 7 }), weight: 1 },
  ),
  assignor: fc.constantFrom<'round-robin' | 'uniform'>('round-robin', 'uniform'),
});

const slotArb = fc.nat({ max: 7 });
/** One step of a run. */
export const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({ t: fc.constant('join' as const), slot: slotArb, lose: fc.boolean() }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('hb' as const),
      slot: slotArb,
      ack: fc.boolean(),
      partial: fc.boolean(),
      omitOwned: fc.boolean(),
      lose: fc.oneof(
        { arbitrary: fc.constant(false), weight: 4 },
        { arbitrary: fc.constant(true), weight: 1 },
      ),
    }),
    weight: 14,
  },
  { arbitrary: fc.record({ t: fc.constant('dup' as const), slot: slotArb }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('leave' as const), slot: slotArb }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('away' as const), slot: slotArb }), weight: 2 },
  {
    arbitrary: fc.record({
      t: fc.constant('replace' as const),
      slot: slotArb,
      lose: fc.boolean(),
      mask: fc.option(fc.integer({ min: 1, max: 7 }), { freq: 3 }),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ t: fc.constant('expire' as const), slot: slotArb }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('timeout' as const), slot: slotArb }), weight: 2 },
  {
    arbitrary: fc.record({
      t: fc.constant('zombie' as const),
      slot: slotArb,
      kind: fc.constantFrom<ZombieKind>('future', 'stale', 'greedy', 'ghost'),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('subscribe' as const),
      slot: slotArb,
      mask: fc.integer({ min: 1, max: 7 }),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('reshard' as const),
      stream: fc.nat({ max: 2 }),
      count: fc.integer({ min: 0, max: 24 }),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ t: fc.constant('restart' as const) }), weight: 1 },
);
