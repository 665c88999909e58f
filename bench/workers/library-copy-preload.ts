import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * `--import` preload for a bench member: every module of the library's build
 * (`libs/stream-coordinator/dist/…`) resolves to the same file under `$BENCH_LIB_COPY/dist/…`
 * instead — a copy of an earlier build (with its `package.json`), kept aside with
 * `cp -r libs/stream-coordinator/{package.json,dist} <dir>`. So one bench run can interleave a
 * member on the build before a change with one on the build after it
 * (`BENCH_OURS_COPY=<dir>`, `bench/scenarios/throughput.ts`), on the same machine and load.
 */
const copy = process.env.BENCH_LIB_COPY;
if (copy) {
  const from = new URL('../../../libs/stream-coordinator/dist/', import.meta.url).href;
  const to = pathToFileURL(`${copy.replace(/\/$/, '')}/dist/`).href;
  const hook = `
const FROM = ${JSON.stringify(from)};
const TO = ${JSON.stringify(to)};
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  return resolved.url.startsWith(FROM)
    ? { ...resolved, url: TO + resolved.url.slice(FROM.length) }
    : resolved;
}
`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);
}
