import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type {
  DescribedGroup,
  GroupEventEntry,
  StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { describeGroup, useCoordinator } from '../coordinator/support/coordinator-fixture.js';
import { settle, TestMember } from '../coordinator/support/test-member.js';
import { TEST_TOKENS } from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { repoRoot } from '../support/service-process.js';
import { runNodeTool, type ToolRun } from '../support/child-run.js';
import { waitFor, waitForNoProblems } from '../support/wait.js';

const RSC = resolve(repoRoot(), 'libs/stream-coordinator/dist/cli/main.js');

describe('rsc (the CLI) against a real coordinator', () => {
  const fx = useCoordinator('rsc-cli', { SESSION_TIMEOUT_MS: '120000' });
  const env = (
    extra: Record<string, string | undefined> = {},
  ): Record<string, string | undefined> => ({
    COORDINATOR_URL: fx.coordinator().url,
    COORDINATOR_ADMIN_TOKEN: TEST_TOKENS.admin,
    COORDINATOR_TOKEN: undefined,
    ...extra,
  });
  const rsc = (args: string[], extra: Record<string, string | undefined> = {}): Promise<ToolRun> =>
    runNodeTool(RSC, args, env(extra));

  it('streams create | list | describe, human tables and --json', async () => {
    const created = await rsc(['streams', 'create', 'orders', '--shards', '4']);
    expect([created.code, created.stderr]).toEqual([0, '']);
    expect(created.stdout).toMatch(
      /^created stream orders: 4 shard\(s\), routing epoch 1, dead letters in \S+:\{orders\}:dlq$/m,
    );
    expect(created.stdout).toMatch(/^SHARD\s+KEY$/m);
    expect(created.stdout).toMatch(new RegExp(`^3\\s+${fx.prefix}:\\{orders:3\\}$`, 'm'));
    expect((await rsc(['streams', 'create', 'orders', '--shards=4'])).stdout).toMatch(
      /^exists: stream orders/,
    );

    const list = await rsc(['streams', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(
      /^STREAM\s+ROUTING EPOCH\s+SHARDS\s+IDS\s+RESHARDING$/,
    );
    expect(list.stdout).toMatch(/^orders\s+1\s+4\s+0-3\s+-$/m);
    const json = JSON.parse(
      (await rsc(['streams', 'describe', 'orders', '--json'])).stdout,
    ) as StreamRouting;
    expect(json.shards.map((s) => s.id)).toEqual([0, 1, 2, 3]);
    expect(json).toEqual((await fx.admin().get<StreamRouting>('/v1/streams/orders')).body);
  });

  it('groups list | describe and members remove', async () => {
    const api = fx.member();
    const a = new TestMember(api, 'g-cli', 'member-a', ['orders'], { instanceId: 'pod-a' });
    const b = new TestMember(api, 'g-cli', 'member-b', ['orders']);
    await a.join();
    await b.join();
    await settle(api, 'g-cli', [a, b]);

    const list = await rsc(['groups', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^GROUP\s+STATE\s+EPOCH\s+MEMBERS$/m);
    expect(list.stdout).toMatch(/^g-cli\s+STABLE\s+2\s+2$/m);

    const described = await rsc(['groups', 'describe', 'g-cli']);
    expect(described.code).toBe(0);
    expect(described.stdout).toMatch(
      /^group g-cli: STABLE, group epoch 2, assignment epoch 2, assignor uniform, 2 member\(s\)$/m,
    );
    expect(described.stdout).toMatch(
      /^MEMBER\s+EPOCH\s+STATE\s+ASSIGNED\s+REVOKING\s+TARGET\s+LAST HEARTBEAT\s+HOST\s+INSTANCE$/m,
    );
    expect(described.stdout).toMatch(
      /^member-a\s+2\s+STABLE\s+orders:\S+\s+-\s+orders:\S+\s+\S+Z\s+127\.0\.0\.1\s+pod-a$/m,
    );
    const viaJson = JSON.parse(
      (await rsc(['groups', 'describe', 'g-cli', '--json'])).stdout,
    ) as DescribedGroup;
    expect(viaJson).toEqual(await describeGroup(fx.admin(), 'g-cli'));

    const removed = await rsc(['members', 'remove', 'g-cli', 'member-b']);
    expect([removed.code, removed.stdout.trim()]).toEqual([
      0,
      'removed member member-b from group g-cli',
    ]);
    const again = await rsc(['members', 'remove', 'g-cli', 'member-b']);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(
      'rsc: DELETE /v1/groups/g-cli/members/member-b failed: 404 UNKNOWN_MEMBER_ID: member "member-b" is not in group "g-cli"',
    );
  });

  it('events tail: the last N events, --json lines, --all for the state snapshots', async () => {
    const api = fx.member();
    const a = new TestMember(api, 'g-events', 'a', ['orders']);
    await a.join();
    const b = new TestMember(api, 'g-events', 'b', ['orders']);
    await b.join();
    await settle(api, 'g-events', [a, b]);

    const all = await rsc(['events', 'tail', 'g-events', '-n', '1000', '--json', '--all']);
    const events = all.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as GroupEventEntry);
    expect(events.some((e) => e.type === 'GROUP_STATE_CHANGED')).toBe(true);
    const semantic = events.filter(
      (e) => e.type !== 'GROUP_STATE_CHANGED' && e.type !== 'GROUP_CHECKPOINT',
    );

    const last3 = await rsc(['events', 'tail', 'g-events', '-n', '3', '--json']);
    expect(
      last3.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as GroupEventEntry).id),
    ).toEqual(semantic.slice(-3).map((e) => e.id));

    const human = await rsc(['events', 'tail', 'g-events', '-n', '1000']);
    const lines = human.stdout.trim().split('\n');
    expect(lines).toHaveLength(semantic.length);
    expect(
      lines.find(
        (l) =>
          l.includes('TARGET_ASSIGNMENT_CHANGED') && l.includes('reason=join') && l.includes('a→b'),
      ),
    ).toBeDefined();
    expect(lines.every((l) => /^\d{4}-\d\d-\d\dT\S+Z {2}epoch +\d+ {2}[A-Z_]+/.test(l))).toBe(true);
  });

  it('events tail --follow prints new events as they are written, until interrupted', async () => {
    const api = fx.member();
    const a = new TestMember(api, 'g-follow', 'a', ['orders']);
    await a.join();
    const child = spawn(
      process.execPath,
      [RSC, 'events', 'tail', 'g-follow', '--follow', '--interval', '100', '-n', '1'],
      {
        env: { ...process.env, ...env() },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const printed = (re: RegExp, what: string): Promise<number> =>
        waitFor(() => re.test(out), {
          timeoutMs: 10_000,
          intervalMs: 25,
          message: () => `${what} to be printed; output so far:\n${out}`,
        });
      await printed(/\n/, 'the initial tail');
      expect(out.trim().split('\n')).toHaveLength(1);
      await new TestMember(api, 'g-follow', 'late-joiner', ['orders']).join();
      await printed(/MEMBER_JOINED\s+memberId=late-joiner/, 'the new join');
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('streams reshard calls POST /v1/streams/{s}/reshard', async () => {
    const missing = await rsc(['streams', 'reshard', 'nope', '--shards', '2']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /^rsc: POST \/v1\/streams\/nope\/reshard failed: 404 STREAM_NOT_FOUND: /,
    );
    await rsc(['streams', 'create', 'resharded', '--shards', '2']);
    const started = await rsc(['streams', 'reshard', 'resharded', '--shards', '3', '--json']);
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    const body = JSON.parse(started.stdout) as StreamRouting;
    expect(body.stream).toBe('resharded');
  });

  it('streams describe shows an idle group a reshard keeps old shards for; streams abandon gives it up', async () => {
    const api = fx.admin();
    const sleepy = new TestMember(fx.member(), 'g-sleepy', 's1', ['nightly']);
    await rsc(['streams', 'create', 'nightly', '--shards', '2']);
    await sleepy.join();
    await fx.member().post('/v1/groups/g-sleepy/leave', { memberId: 's1' });
    const key = `${fx.prefix}:{nightly:0}`;
    await fx.redis().xadd(key, '*', 'key', 'k', 'payload', '{}');
    await fx.redis().xgroup('CREATE', key, 'g-sleepy', '0');
    expect((await rsc(['streams', 'reshard', 'nightly', '--shards', '3'])).code).toBe(0);
    let described = '';
    await waitForNoProblems(
      async () => {
        described = (await rsc(['streams', 'describe', 'nightly'])).stdout;
        return /waiting for idle group g-sleepy/.test(described) ? [] : [described];
      },
      { timeoutMs: 30_000, message: 'the idle group is shown', retryErrors: true },
    );
    expect(described).toMatch(/`rsc streams abandon nightly g-sleepy` gives them up/);

    const wrong = await rsc(['streams', 'abandon', 'nightly', 'g-other']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(
      /^rsc: POST \/v1\/streams\/nightly\/groups\/g-other\/abandon failed: 404 NOT_FOUND: /,
    );
    const done = await rsc(['streams', 'abandon', 'nightly', 'g-sleepy']);
    expect([done.code, done.stderr]).toEqual([0, '']);
    expect(done.stdout).toMatch(/^abandoned group g-sleepy: stream nightly/m);
    expect(done.stdout).toMatch(/^abandoned group g-sleepy \(admin, /m);
    await waitForNoProblems(
      async () => {
        const r = await api.get<StreamRouting>('/v1/streams/nightly');
        return r.body.resharding === null ? [] : [JSON.stringify(r.body.resharding)];
      },
      { timeoutMs: 30_000, message: 'the reshard completes', retryErrors: true },
    );
    expect(await fx.redis().exists(key)).toBe(0);
  });

  it('fails with a clear message and a non-zero exit code', async () => {
    const cases: Array<[string[], Record<string, string | undefined>, number, RegExp]> = [
      [['frobnicate'], {}, 2, /^rsc: unknown command "frobnicate"; run "rsc --help" for usage$/],
      [
        ['groups', 'explode'],
        {},
        2,
        /^rsc: unknown command "groups explode" \(groups: list, describe\)/,
      ],
      [['groups', 'describe'], {}, 2, /^rsc: "groups describe" needs <group>/],
      [['streams', 'create', 'x'], {}, 2, /^rsc: option --shards is required/],
      [
        ['streams', 'create', 'x', '--shards', 'many'],
        {},
        2,
        /^rsc: option --shards must be an integer/,
      ],
      [['groups', 'list', '--jsn'], {}, 2, /^rsc: unknown option --jsn/],
      [
        ['groups', 'describe', 'no-such-group'],
        {},
        1,
        /^rsc: GET \/v1\/groups\/no-such-group failed: 404 GROUP_ID_NOT_FOUND: group "no-such-group" does not exist$/,
      ],
      [
        ['groups', 'list'],
        { COORDINATOR_ADMIN_TOKEN: undefined },
        1,
        /^rsc: GET \/v1\/groups failed: 401 UNAUTHENTICATED: .* \(set COORDINATOR_ADMIN_TOKEN, COORDINATOR_TOKEN or COORDINATOR_VIEWER_TOKEN, or pass --token\)$/,
      ],
      [
        ['streams', 'create', 'y', '--shards', '1'],
        { COORDINATOR_ADMIN_TOKEN: undefined, COORDINATOR_VIEWER_TOKEN: TEST_TOKENS.viewer },
        1,
        /^rsc: PUT \/v1\/streams\/y failed: 403 FORBIDDEN: .* \(this command needs an admin token: COORDINATOR_ADMIN_TOKEN\)$/,
      ],
      [
        ['streams', 'create', 'y', '--shards', '1'],
        { COORDINATOR_ADMIN_TOKEN: undefined, COORDINATOR_TOKEN: TEST_TOKENS.member },
        1,
        /^rsc: PUT \/v1\/streams\/y failed: 403 FORBIDDEN: .* \(this command needs an admin token: COORDINATOR_ADMIN_TOKEN\)$/,
      ],
      [
        ['groups', 'list'],
        { COORDINATOR_URL: `http://127.0.0.1:${await freePort()}` },
        1,
        /^rsc: cannot reach the coordinator at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED: .*\); check COORDINATOR_URL or --url$/,
      ],
      [
        ['groups', 'list'],
        { COORDINATOR_URL: 'ftp://x' },
        2,
        /^rsc: the coordinator URL must be http/,
      ],
    ];
    for (const [args, extra, code, message] of cases) {
      const run = await rsc(args, extra);
      expect({ args, code: run.code }).toEqual({ args, code });
      expect(run.stderr.trim()).toMatch(message);
      expect(run.stdout).toBe('');
    }
    // The member token is enough for reads.
    const read = await rsc(['groups', 'list'], {
      COORDINATOR_ADMIN_TOKEN: undefined,
      COORDINATOR_TOKEN: `${TEST_TOKENS.member},other`,
    });
    expect(read.code).toBe(0);
    const help = await rsc(['--help']);
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining('Usage: rsc <command>')]);
  });
});
