import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareEntryIds } from './entry-id-order.js';
import { KeyGate, type GatedEntry, type KeyGateOutcome } from './key-gate.js';

/** One step of a run: a read/claim offering entries, a completion, a failure, a revoke, a loss. */
type Step =
  | { kind: 'offer'; count: number }
  | { kind: 'settle'; pick: number; outcome: KeyGateOutcome }
  | { kind: 'acks' }
  | { kind: 'close' }
  | { kind: 'lose' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('offer' as const),
      count: fc.integer({ min: 1, max: 8 }),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom<KeyGateOutcome>('ack', 'ack', 'ack', 'skip', 'stop', 'error'),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'acks' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'close' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'lose' as const }) },
);

const keys = fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e'), { minLength: 1, maxLength: 60 });

describe('KeyGate (ordering: key)', () => {
  it('any interleaving keeps per-key order and acks each entry once, only after success', () => {
    fc.assert(
      fc.property(
        keys,
        fc.array(step, { maxLength: 120 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 12 }),
        (entryKeys, steps, maxConcurrency, maxBuffered) => {
          const entries: GatedEntry[] = entryKeys.map((key, i) => ({
            id: `${1000 + i}-${i % 3}`,
            key,
          }));
          const gate = new KeyGate(maxConcurrency, maxBuffered);
          const keyOf = new Map(entries.map((e) => [e.id, e.key]));
          const index = new Map(entries.map((e, i) => [e.id, i]));
          let offered = 0;
          const settled = new Map<string, KeyGateOutcome>();
          const inFlight: string[] = [];
          const dispatched: string[] = [];
          const acked = new Set<string>();
          let closed = false;
          let lost = false;

          /** An earlier entry of `e`'s key ended without ack/skip: the key is blocked. */
          const stuck = (e: GatedEntry): boolean =>
            entries
              .slice(0, index.get(e.id))
              .some(
                (x) =>
                  x.key === e.key && settled.get(x.id) !== 'ack' && settled.get(x.id) !== 'skip',
              );
          const waiting = (): GatedEntry[] =>
            entries.slice(0, offered).filter((e) => !dispatched.includes(e.id));
          const pump = (): void => {
            for (let entry = gate.next(); entry !== undefined; entry = gate.next()) {
              expect(closed).toBe(false);
              // the earliest buffered entry whose key is neither in flight nor blocked starts
              const busy = new Set(inFlight.map((id) => keyOf.get(id)));
              const first = waiting().find((e) => !busy.has(e.key) && !stuck(e));
              expect(entry.id).toBe(first?.id);
              const i = index.get(entry.id) as number;
              // every earlier entry of the key was dispatched and settled with ack/skip
              for (let j = 0; j < i; j++) {
                const earlier = entries[j] as GatedEntry;
                if (earlier.key !== entry.key) continue;
                const outcome = settled.get(earlier.id);
                expect(outcome === 'ack' || outcome === 'skip').toBe(true);
              }
              expect(dispatched).not.toContain(entry.id);
              dispatched.push(entry.id);
              inFlight.push(entry.id);
              expect(inFlight.length).toBeLessThanOrEqual(maxConcurrency);
            }
          };
          const takeAcks = (): void => {
            for (const id of gate.takeAcks()) {
              expect(lost).toBe(false);
              expect(acked.has(id)).toBe(false);
              expect(settled.get(id)).toBe('ack');
              acked.add(id);
            }
          };

          for (const s of steps) {
            if (s.kind === 'offer') {
              const n = Math.min(s.count, gate.room, entries.length - offered);
              for (let k = 0; k < n; k++) {
                const entry = entries[offered++] as GatedEntry;
                expect(gate.offer(entry)).toBe(!closed);
              }
              expect(gate.held).toBeLessThanOrEqual(maxBuffered);
            } else if (s.kind === 'settle') {
              if (inFlight.length === 0) continue;
              const [id] = inFlight.splice(s.pick % inFlight.length, 1) as [string];
              gate.settle(id, s.outcome);
              settled.set(id, s.outcome);
              expect(() => gate.settle(id, 'ack')).toThrow(RangeError);
            } else if (s.kind === 'acks') takeAcks();
            else if (s.kind === 'close') {
              // the buffered entries come back, in id order (left pending)
              const left = closed ? [] : waiting().map((e) => e.id);
              expect(gate.close().map((e) => e.id)).toEqual(left);
              closed = true;
            } else {
              closed = true;
              lost = true;
              gate.lose();
            }
            pump();
            // liveness: nothing startable is left waiting
            if (!closed && inFlight.length < maxConcurrency) {
              const busy = new Set(inFlight.map((id) => keyOf.get(id)));
              for (const e of waiting()) expect(busy.has(e.key) || stuck(e)).toBe(true);
            }
          }
          takeAcks();
          // drained: every in-flight entry settles; what settled `ack` before a loss is acked
          for (const id of inFlight.splice(0)) {
            gate.settle(id, 'ack');
            settled.set(id, 'ack');
          }
          takeAcks();
          if (!lost) {
            for (const [id, outcome] of settled) expect(acked.has(id)).toBe(outcome === 'ack');
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('refuses entries at or below the highest offered, and bounds that are not positive', () => {
    const gate = new KeyGate(2, 4);
    expect(gate.offer({ id: '5-0', key: 'a' })).toBe(true);
    expect(gate.offer({ id: '5-0', key: 'a' })).toBe(false);
    expect(gate.offer({ id: '4-9', key: 'b' })).toBe(false);
    expect(gate.highestOffered).toBe('5-0');
    expect(() => new KeyGate(0, 4)).toThrow(RangeError);
    expect(() => new KeyGate(1, 1.5)).toThrow(RangeError);
  });

  it('orders entry ids as Redis does, past 2^53', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 64n }),
        fc.bigInt({ min: 0n, max: 2n ** 64n }),
        fc.nat(),
        fc.nat(),
        (ma, mb, sa, sb) => {
          const expected = ma === mb ? Math.sign(sa - sb) : ma < mb ? -1 : 1;
          expect(Math.sign(compareEntryIds(`${ma}-${sa}`, `${mb}-${sb}`))).toBe(expected);
        },
      ),
    );
  });
});
