#!/usr/bin/env node
import { runCli } from './run-cli.js';

/**
 * The `rsc` command (package `bin`): `rsc <command> [arguments] [options]`; see `rsc --help`.
 * Reads COORDINATOR_URL and COORDINATOR_ADMIN_TOKEN / COORDINATOR_TOKEN from the environment.
 */
const abort = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => abort.abort());

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  signal: abort.signal,
});
