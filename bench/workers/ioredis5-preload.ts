import { register } from 'node:module';

/**
 * `--import` preload for a bench member: every `import … from 'ioredis'` resolves to the
 * `ioredis5` alias (ioredis 5), so the library's connections run on ioredis 5 — what a user gets
 * who installs ioredis 5 once the library accepts either major version. Measures that lever
 * without changing the library (`BENCH_OURS_IOREDIS5=1`, `bench/scenarios/throughput.ts`).
 */
const hook = `
export async function resolve(specifier, context, next) {
  return next(specifier === 'ioredis' ? 'ioredis5' : specifier, context);
}
`;
register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);
