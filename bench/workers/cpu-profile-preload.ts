import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

/**
 * Preload (`--import`) that CPU-profiles the whole process and writes
 * `$BENCH_CPU_PROF_DIR/<BENCH_CPU_PROF_LABEL>-<pid>.cpuprofile` at exit. It does what
 * `--cpu-prof` does, but can be given through NODE_OPTIONS (where `--cpu-prof` is not allowed),
 * so processes started by helpers that take only an environment can be profiled too. With
 * `BENCH_CPU_PROF_TRIGGER=1` it profiles only between a first and a second SIGWINCH (ignored by default; Nest listens to SIGUSR2) — a steady
 * phase without start-up), and writes the profile at the second.
 */
const dir = process.env.BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', {
    interval: Number(process.env.BENCH_CPU_PROF_INTERVAL_US ?? 500),
  });
  const triggered = process.env.BENCH_CPU_PROF_TRIGGER === '1';
  if (!triggered) session.post('Profiler.start');
  let written = false;
  const write = (): void => {
    if (written) return;
    written = true;
    // the in-process session answers synchronously, so this completes before the process ends
    session.post('Profiler.stop', (error, result) => {
      if (error) return;
      mkdirSync(dir, { recursive: true });
      const label = process.env.BENCH_CPU_PROF_LABEL ?? 'process';
      writeFileSync(
        join(dir, `${label}-${process.pid}.cpuprofile`),
        JSON.stringify(result.profile),
      );
    });
  };
  let started = !triggered;
  process.on('SIGWINCH', () => {
    if (!started) {
      started = true;
      session.post('Profiler.start');
    } else write();
  });
  process.on('exit', () => {
    if (started) write();
  });
  // Nest's shutdown hooks close the app, then re-send the signal to themselves: the second
  // SIGTERM (or the first when nobody else listens) writes the profile and exits.
  let terms = 0;
  process.on('SIGTERM', () => {
    terms++;
    if (terms >= 2 || process.listenerCount('SIGTERM') === 1) {
      if (started) write();
      process.exit(0);
    }
  });
}
