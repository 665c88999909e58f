import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`; `.ci/run` installs it when missing). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Flags for this machine: headless, no sandbox (root), and no background traffic — the network
 * is closed, and without these Chromium keeps trying Google's hosts.
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

/** Thrown when Chromium is not installed: the browser test must fail, not skip. */
export class ChromiumMissingError extends Error {
  override readonly name = 'ChromiumMissingError';

  constructor() {
    super(
      `Chromium is not installed at ${CHROMIUM_PATH}: the dashboard browser test needs Debian's chromium package ` +
        '(run `apt-get update && apt-get install -y chromium`; .ci/run does this when it is missing)',
    );
  }
}

/** A headless Chromium with a fresh profile, driven by playwright-core. */
export interface HeadlessChromium {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Launches Debian's Chromium through playwright-core with a new empty `--user-data-dir`
 * (a persistent context is how playwright accepts one).
 *
 * @throws ChromiumMissingError when `/usr/bin/chromium` does not exist
 */
export async function launchChromium(
  viewport = { width: 1440, height: 1000 },
): Promise<HeadlessChromium> {
  if (!existsSync(CHROMIUM_PATH)) throw new ChromiumMissingError();
  mkdirSync(tmpdir(), { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'rsc-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport,
      timeout: 60_000,
    });
    return {
      context,
      async close() {
        await context.close().catch(() => undefined);
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
