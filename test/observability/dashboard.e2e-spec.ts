import { mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { deadLetterFields } from '@redis-stream-coordinator/nestjs/internal';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useCoordinator } from '../coordinator/support/coordinator-fixture.js';
import { settle, TestMember } from '../coordinator/support/test-member.js';
import { TEST_TOKENS } from '../support/coordinator-process.js';
import { repoRoot } from '../support/service-process.js';
import { type HeadlessChromium, launchChromium } from './support/headless-chromium.js';
import { pollUntil } from '../support/wait.js';

/** The README's screenshot is refreshed only on request, so a test run leaves the tree clean. */
const UPDATE_SCREENSHOT = process.env.UPDATE_SCREENSHOTS === '1';
const SCREENSHOT = UPDATE_SCREENSHOT
  ? resolve(repoRoot(), 'docs/images/dashboard.png')
  : join(tmpdir(), `rsc-dashboard-${process.pid}.png`);
const GROUP = 'billing';

describe('dashboard /ui in headless Chromium', () => {
  const fx = useCoordinator('dashboard', {
    STREAMS: 'orders:4',
    SESSION_TIMEOUT_MS: '120000',
    HEARTBEAT_INTERVAL_MS: '3000',
  });
  let browser: HeadlessChromium;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('asks for a token, refuses a wrong one, and its data routes need one (viewer or more)', async () => {
    await page.goto(`${fx.coordinator().url}/ui`);
    await page.locator('#login:not(.hidden)').waitFor({ timeout: 10_000 });
    await page.fill('#token-input', 'not-the-token');
    await page.click('#login-form button[type=submit]');
    await page.locator('#login-error', { hasText: 'UNAUTHENTICATED' }).waitFor({ timeout: 10_000 });
    expect((await fx.admin().as(TEST_TOKENS.viewer).get('/ui/api/overview')).status).toBe(200);
    expect((await fx.member().get('/ui/api/overview')).status).toBe(200);
    expect((await fx.admin().as(null).get('/ui/api/overview')).status).toBe(401);
    expect((await fx.admin().get('/ui/api/groups/nope')).status).toBe(404);
    // Forget the bad token for the next test.
    await page.evaluate('sessionStorage.clear()');
  });

  it("shows a group's members, updates live when one joins, with ownership grid, lag, timeline and reshard progress", async () => {
    problems.length = 0;
    const api = fx.member();
    const a = new TestMember(api, GROUP, 'worker-a', ['orders'], { instanceId: 'billing-0' });
    await a.join();
    await settle(api, GROUP, [a]);

    await page.goto(
      `${fx.coordinator().url}/ui?interval=300#token=${TEST_TOKENS.admin}&group=${GROUP}`,
    );
    await page.locator('#members tr[data-member="worker-a"]').waitFor({ timeout: 15_000 });
    expect(await page.locator('#groups [data-group="billing"]').count()).toBe(1);
    expect(await page.locator('#grid td[data-member="worker-a"][data-cell="owned"]').count()).toBe(
      4,
    );
    // The token left the address bar once read.
    expect(page.url()).not.toContain('token=');

    // A second member joins: the page shows it without a reload; worker-a must revoke two shards
    // that worker-b awaits.
    const refreshedBefore = await page.getAttribute('body', 'data-refreshed');
    const b = new TestMember(api, GROUP, 'worker-b', ['orders']);
    await b.join();
    await a.beat({ ownedShards: a.owned });
    await page.locator('#members tr[data-member="worker-b"]').waitFor({ timeout: 15_000 });
    expect(await page.getAttribute('body', 'data-refreshed')).not.toBe(refreshedBefore);
    await waitForCount(page, '#grid td[data-member="worker-a"][data-cell="revoking"]', 2);
    await waitForCount(page, '#grid td[data-member="worker-b"][data-cell="awaiting"]', 2);
    await page
      .locator('#timeline li[data-type="TARGET_ASSIGNMENT_CHANGED"]', { hasText: 'join' })
      .first()
      .waitFor({ timeout: 10_000 });
    await page
      .locator('#timeline li[data-type="MEMBER_JOINED"]', { hasText: 'worker-b' })
      .waitFor({ timeout: 10_000 });

    // Per-shard lag from XINFO GROUPS: entries nobody has read yet.
    for (const shard of [0, 1, 2, 3]) {
      const key = `${fx.prefix}:{orders:${shard}}`;
      await fx
        .redis()
        .xgroup('CREATE', key, GROUP, '0', 'MKSTREAM')
        .catch(() => undefined);
      for (let i = 0; i <= shard * 3; i++) await fx.redis().xadd(key, '*', 'seed', String(i));
    }
    await page
      .locator('#grid td[data-lag="orders/3"]', { hasText: /^10$/ })
      .waitFor({ timeout: 10_000 });

    // A reshard in progress shows on the stream and in the group view.
    const reshard = await fx.admin().post(`/v1/streams/orders/reshard`, { shards: 6 });
    expect(reshard.status).toBe(202);
    await page.locator('#reshards .reshard').first().waitFor({ timeout: 15_000 });
    await page.locator('#streams [data-stream="orders"] .reshard').waitFor({ timeout: 10_000 });
    expect(await page.locator('#reshards').textContent()).toMatch(/resharding 4 → 6/);

    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    if (!UPDATE_SCREENSHOT) rmSync(SCREENSHOT, { force: true });
    expect(problems).toEqual([]);
  });

  it('lists the dead letters of a stream and replays them', async () => {
    problems.length = 0;
    expect((await fx.admin().put('/v1/streams/payments', { shards: 2 })).status).toBe(201);
    const dlq = `${fx.prefix}:{payments}:dlq`;
    const ids: string[] = [];
    for (const key of ['p-1', 'p-2']) {
      const fields = deadLetterFields({
        fields: ['key', key, 'payload', '{}'].map((v) => Buffer.from(v)),
        stream: 'payments',
        shard: 0,
        group: GROUP,
        id: '1-0',
        reason: 'max-deliveries',
        error: new RangeError(`bad amount for ${key}`),
        deliveryCount: 5,
        memberId: 'worker-a',
        failedAt: new Date(),
      });
      ids.push((await fx.redis().xadd(dlq, '*', ...fields)) as string);
    }
    await page.goto(`${fx.coordinator().url}/ui?interval=300#token=${TEST_TOKENS.admin}`);
    await page.click('#streams [data-dlq-open="payments"]');
    await page.locator(`#dead-letters tr[data-dlq="${ids[0]}"]`).waitFor({ timeout: 15_000 });
    expect(await page.locator(`#dead-letters tr[data-dlq="${ids[1]}"]`).textContent()).toContain(
      'RangeError: bad amount for p-2',
    );
    await page.click(`#dead-letters button[data-replay="${ids[0]}"]`);
    await page.locator('#dlq-result[data-replayed="1"]').waitFor({ timeout: 10_000 });
    await page
      .locator(`#dead-letters tr[data-dlq="${ids[0]}"]`)
      .waitFor({ state: 'detached', timeout: 10_000 });
    await page.click('#dlq-replay-all');
    await page
      .locator('#dead-letters td', { hasText: 'no dead letters waiting' })
      .waitFor({ timeout: 10_000 });
    const shards = await Promise.all(
      [0, 1].map((n) => fx.redis().xrange(`${fx.prefix}:{payments:${n}}`, '-', '+')),
    );
    const replayOf = shards
      .flat()
      .map(
        ([, f]) =>
          (JSON.parse(f[f.indexOf('headers') + 1] ?? '{}') as Record<string, string>)[
            'rsc-replay-of'
          ],
      )
      .sort();
    expect(replayOf).toEqual([...ids].sort());
    expect(problems).toEqual([]);
  });

  it('tells a viewer that dead letters need a member token, and keeps it signed in', async () => {
    // Dead letters hold message payloads: list/show need the member role (docs/protocol.md §16.2).
    // A viewer (the documented dashboard user) opening them sees why, not the login form.
    problems.length = 0;
    await page.goto(`${fx.coordinator().url}/ui?interval=300#token=${TEST_TOKENS.viewer}`);
    await page.click('#streams [data-dlq-open="orders"]');
    await page
      .locator('#dead-letters td', { hasText: 'member token' })
      .waitFor({ timeout: 10_000 });
    // Several refreshes later: still signed in, still showing the groups.
    const refreshed = Number(await page.locator('body').getAttribute('data-refreshed'));
    await pollUntil(
      async () => Number(await page.locator('body').getAttribute('data-refreshed')),
      (at) => at > refreshed,
      { timeoutMs: 10_000, message: 'the dashboard refreshed again' },
    );
    expect(await page.locator('#login').isHidden()).toBe(true);
    expect(await page.locator('#app').isVisible()).toBe(true);
    expect(await page.locator('#dlq-replay-all').isDisabled()).toBe(true);
    await page.evaluate('sessionStorage.clear()');
  });
});

async function waitForCount(
  page: Page,
  selector: string,
  n: number,
  timeoutMs = 10_000,
): Promise<void> {
  await pollUntil(
    () => page.locator(selector).count(),
    (count) => count === n,
    { timeoutMs, message: `${n} elements matching ${selector}` },
  );
}
