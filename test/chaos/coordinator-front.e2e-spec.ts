import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.js';
import { CoordinatorFront } from './harness/coordinator-front.js';

/** A tiny HTTP server standing in for a coordinator replica: answers its name, counts requests. */
interface FakeReplica {
  readonly name: string;
  port: number;
  server: Server | null;
  requests: number;
}

async function listen(replica: FakeReplica): Promise<void> {
  const server = createServer((req, res) => {
    replica.requests++;
    req.resume();
    const wait = (req.url ?? '').includes('wait') ? 150 : 0;
    req.on('end', () => setTimeout(() => res.end(`${replica.name} ${req.url ?? ''}`), wait));
  });
  await new Promise<void>((resolve) => server.listen(replica.port, '127.0.0.1', resolve));
  replica.server = server;
}

async function close(replica: FakeReplica): Promise<void> {
  const server = replica.server;
  replica.server = null;
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** One request on a fresh connection (no keep-alive): the answer's text, or the error. */
async function ask(front: CoordinatorFront, path = '/', timeoutMs = 3000): Promise<string> {
  try {
    const res = await fetch(`${front.url}${path}`, {
      headers: { connection: 'close' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    return await res.text();
  } catch (error) {
    return `error: ${(error as Error).name}`;
  }
}

describe('chaos harness: the coordinator front (a faulty load balancer)', () => {
  const a: FakeReplica = { name: 'A', port: 0, server: null, requests: 0 };
  const b: FakeReplica = { name: 'B', port: 0, server: null, requests: 0 };
  let front: CoordinatorFront;

  beforeAll(async () => {
    a.port = await freePort();
    b.port = await freePort();
    await Promise.all([listen(a), listen(b)]);
    front = await CoordinatorFront.start(() => [a.port, b.port]);
  });
  afterAll(async () => {
    await front?.close();
    await Promise.all([close(a), close(b)]);
  });

  it('spreads new connections over the replicas and skips one that is down', async () => {
    const names = new Set<string>();
    for (let i = 0; i < 4; i++) names.add((await ask(front)).split(' ')[0] as string);
    expect([...names].sort()).toEqual(['A', 'B']);
    await close(a);
    for (let i = 0; i < 4; i++) expect(await ask(front)).toBe('B /');
    await listen(a);
    const again = new Set<string>();
    for (let i = 0; i < 4; i++) again.add((await ask(front)).split(' ')[0] as string);
    expect([...again].sort()).toEqual(['A', 'B']);
  });

  it('black hole: nothing gets through until healed, then the held request is answered', async () => {
    const before = a.requests + b.requests;
    front.blackHole();
    const pending = ask(front, '/held', 5000);
    await new Promise((r) => setTimeout(r, 400));
    expect(a.requests + b.requests).toBe(before);
    front.heal();
    expect(await pending).toMatch(/^[AB] \/held$/);
    expect(a.requests + b.requests).toBe(before + 1);
  });

  it('black hole healed with a reset: the held request fails', async () => {
    front.blackHole();
    const pending = ask(front, '/cut', 5000);
    await new Promise((r) => setTimeout(r, 300));
    front.heal({ cut: true });
    expect(await pending).toMatch(/^error/);
    expect(await ask(front)).toMatch(/^[AB] \/$/);
  });

  it('dropped responses: the request reaches the replica, the answer never reaches the client', async () => {
    const before = a.requests + b.requests;
    front.dropResponses();
    const pending = ask(front, '/dropped', 5000);
    for (let i = 0; i < 100 && a.requests + b.requests === before; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(a.requests + b.requests).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 200));
    front.heal();
    expect(await pending).toMatch(/^error/);
    expect(front.currentMode).toBe('open');
    expect(await ask(front)).toMatch(/^[AB] \/$/);
  });

  it('delays responses by the configured latency, in order, also when it changes meanwhile', async () => {
    front.responseDelayMs = 300;
    const started = performance.now();
    expect(await ask(front, '/slow')).toMatch(/\/slow$/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    // two pipelined requests on one connection; the second is answered after the delay dropped
    // to 0, and must still come after the first (held for 300 ms)
    const socket = connect(front.port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.write(
      'GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /wait-second HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    await new Promise((r) => setTimeout(r, 50));
    front.responseDelayMs = 0;
    for (let i = 0; i < 100 && !text.includes('/wait-second'); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    socket.destroy();
    expect(text.indexOf('/first')).toBeGreaterThan(0);
    expect(text.indexOf('/wait-second')).toBeGreaterThan(text.indexOf('/first'));
  });

  it('a port with no replica at all: the connection is refused cleanly', async () => {
    const lonely = await CoordinatorFront.start(() => [a.port === 1 ? 2 : 1]);
    expect(await ask(lonely)).toMatch(/^error/);
    await lonely.close();
  });
});
