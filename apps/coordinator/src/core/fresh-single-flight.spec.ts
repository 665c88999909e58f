import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FreshSingleFlight } from './fresh-single-flight.js';

interface Run {
  readonly index: number;
  settle(ok: boolean): void;
}

/** A flight whose runs the test settles by hand; each run resolves with its start index. */
function harness(): { flight: FreshSingleFlight<number>; runs: Run[]; active: () => number } {
  const runs: Run[] = [];
  let active = 0;
  const flight = new FreshSingleFlight<number>(
    () =>
      new Promise<number>((resolve, reject) => {
        const index = runs.length;
        active++;
        runs.push({
          index,
          settle: (ok) => {
            active--;
            if (ok) resolve(index);
            else reject(new Error(`run ${index} failed`));
          },
        });
      }),
  );
  return { flight, runs, active: () => active };
}

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe('FreshSingleFlight', () => {
  it('every call settles with a run that started after it; runs never overlap', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.constant('call' as const),
            fc.constant('ok' as const),
            fc.constant('fail' as const),
          ),
          {
            maxLength: 40,
          },
        ),
        async (steps) => {
          const { flight, runs, active } = harness();
          const calls: Array<{ startsAtCall: number; outcome?: number | 'failed' }> = [];
          let settled = 0;
          const settleNext = async (ok: boolean): Promise<void> => {
            const run = runs[settled];
            if (!run) return;
            settled++;
            run.settle(ok);
            await flush();
          };
          for (const step of steps) {
            if (step === 'call') {
              const call: (typeof calls)[number] = { startsAtCall: runs.length };
              calls.push(call);
              flight.run().then(
                (index) => (call.outcome = index),
                () => (call.outcome = 'failed'),
              );
              await flush();
            } else await settleNext(step === 'ok');
            expect(active()).toBeLessThanOrEqual(1);
          }
          while (settled < runs.length) await settleNext(true);
          await flight.idle();
          expect(runs.length).toBeLessThanOrEqual(calls.length);
          for (const call of calls) {
            expect(call.outcome).toBeDefined();
            if (call.outcome !== 'failed')
              expect(call.outcome).toBeGreaterThanOrEqual(call.startsAtCall);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a call during a failing run gets a fresh run, not the failure', async () => {
    const { flight, runs } = harness();
    const first = flight.run();
    const second = flight.run();
    runs[0]?.settle(false);
    await expect(first).rejects.toThrow('run 0 failed');
    await flush();
    runs[1]?.settle(true);
    await expect(second).resolves.toBe(1);
  });

  it('a task that throws at once rejects the run, and the next call starts another', async () => {
    let calls = 0;
    const flight = new FreshSingleFlight<number>(() => {
      calls++;
      if (calls === 1) throw new Error('sync failure');
      return Promise.resolve(calls);
    });
    await expect(flight.run()).rejects.toThrow('sync failure');
    await expect(flight.run()).resolves.toBe(2);
  });
});
