import { execFileSync } from 'node:child_process';
import { connectRedis } from '../support/redis-client.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { findExecutable } from '../support/find-executable.js';
import { freePort } from '../support/free-port.js';
import { uniquePrefix } from '../support/redis.js';
import { createTempDir, type TempDir } from '../support/temp-dir.js';
import { WorkerProcess } from '../support/worker-process.js';
import { type MemberApp, startMemberApp } from '../library/e2e/member-app.js';
import { ACL_PASSWORDS, type AclRedis, startAclRedis } from './support/acl-redis.js';

/**
 * TLS end to end (docs/operations.md, "Security" › "Redis" and "HTTPS"), with a CA made here by
 * openssl: Redis serves `rediss://` (and the ACL users); the coordinator (a child process)
 * trusts the CA through `NODE_EXTRA_CA_CERTS`; HTTPS in front of the coordinator is a
 * TLS-terminating proxy; the example worker (a child process) reaches the coordinator over
 * https and Redis over rediss with the same variable; an in-process producer passes the CA in
 * ioredis options. Clients without the CA are refused.
 */
const openssl = findExecutable('openssl');

/** A CA and a server certificate for 127.0.0.1 and localhost, signed by it. */
function makeCertificates(dir: string): { ca: string; cert: string; key: string } {
  const file = (name: string): string => join(dir, name);
  const run = (args: string[]): void => {
    execFileSync(openssl as string, args, { stdio: 'pipe' });
  };
  run([
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=rsc test CA',
    '-keyout', file('ca.key'), '-out', file('ca.pem'),
  ]); // prettier-ignore
  run([
    'req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost',
    '-keyout', file('server.key'), '-out', file('server.csr'),
  ]); // prettier-ignore
  writeFileSync(file('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  run([
    'x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'),
    '-CAcreateserial', '-days', '1', '-extfile', file('ext.cnf'), '-out', file('server.pem'),
  ]); // prettier-ignore
  return { ca: file('ca.pem'), cert: file('server.pem'), key: file('server.key') };
}

/** HTTPS on a free port, forwarding every connection to `127.0.0.1:<target>` (plain HTTP). */
async function startTlsProxy(
  target: number,
  tls: { cert: string; key: string },
): Promise<{ port: number; server: TlsServer }> {
  const server = createTlsServer(
    { cert: readFileSync(tls.cert), key: readFileSync(tls.key) },
    (socket) => {
      const upstream = netConnect(target, '127.0.0.1');
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
      socket.pipe(upstream).pipe(socket);
    },
  );
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, server };
}

describe.skipIf(!openssl)('TLS: rediss:// to Redis, HTTPS in front of the coordinator', () => {
  const prefix = uniquePrefix('tls');
  let dir: TempDir;
  let files: { ca: string; cert: string; key: string };
  let redis: AclRedis;
  let coordinator: CoordinatorProcess;
  let proxy: { port: number; server: TlsServer };
  let worker: WorkerProcess;
  let producer: MemberApp;
  const clients: Redis[] = [];

  beforeAll(async () => {
    dir = createTempDir('tls');
    files = makeCertificates(dir.path);
    redis = await startAclRedis(prefix, files);
    const rediss = (user: keyof typeof ACL_PASSWORDS): string =>
      `rediss://${user}:${ACL_PASSWORDS[user]}@127.0.0.1:${redis.tlsPort}`;
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: rediss('rsc-coordinator'),
      env: {
        NODE_EXTRA_CA_CERTS: files.ca,
        STREAMS: 'orders:2',
        HEARTBEAT_INTERVAL_MS: '300',
        SESSION_TIMEOUT_MS: '3000',
      },
    });
    proxy = await startTlsProxy(coordinator.port, files);
    worker = await WorkerProcess.start({
      coordinatorUrl: `https://localhost:${proxy.port}`,
      redisUrl: rediss('rsc-worker'),
      group: 'billing',
      env: { NODE_EXTRA_CA_CERTS: files.ca },
    });
    producer = await startMemberApp({
      coordinatorUrl: coordinator.url,
      group: 'billing',
      redis: '',
      module: {
        redis: {
          host: '127.0.0.1',
          port: redis.tlsPort as number,
          username: 'rsc-producer',
          password: ACL_PASSWORDS['rsc-producer'],
          tls: { ca: readFileSync(files.ca) },
        },
      },
    });
  });

  afterAll(async () => {
    await producer?.app.close();
    await worker?.stop();
    await new Promise<void>((resolve) => (proxy ? proxy.server.close(() => resolve()) : resolve()));
    await coordinator?.stop();
    for (const client of clients) client.disconnect();
    await redis?.stop();
    dir?.remove();
  });

  it('the coordinator, a worker and a producer connect over TLS', async () => {
    const api = new CoordinatorApi(coordinator.url);
    const routing = (await api.get<StreamRouting>('/v1/streams/orders')).body;
    expect(routing.shards).toHaveLength(2);
    await vi.waitFor(async () => expect((await worker.status()).shards).toHaveLength(2), {
      timeout: 20_000,
      interval: 100,
    });
    for (let seq = 0; seq < 10; seq++)
      await producer.producer.publish('orders', `customer-${seq}`, { seq });
    await vi.waitFor(async () => expect((await worker.status()).handled).toBe(10), {
      timeout: 20_000,
      interval: 100,
    });
    expect(worker.output()).not.toMatch(/self[- ]signed|UNABLE_TO_VERIFY|ECONNRESET/);
  });

  it('clients without the CA are refused, on Redis and on the HTTPS proxy', async () => {
    const noCa = connectRedis(
      `rediss://rsc-worker:${ACL_PASSWORDS['rsc-worker']}@127.0.0.1:${redis.tlsPort}`,
      { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null },
    );
    const errors: Error[] = [];
    noCa.on('error', (error: Error) => errors.push(error));
    clients.push(noCa);
    await expect(noCa.connect()).rejects.toThrow();
    expect(errors.map((e) => e.message).join('\n')).toMatch(/self[- ]signed|unable to verify/i);
    await expect(fetch(`https://localhost:${proxy.port}/health/live`)).rejects.toThrow();
    // With the CA, Redis answers.
    const withCa = connectRedis(
      `rediss://rsc-worker:${ACL_PASSWORDS['rsc-worker']}@127.0.0.1:${redis.tlsPort}`,
      { lazyConnect: true, tls: { ca: readFileSync(files.ca) }, maxRetriesPerRequest: 0 },
    );
    withCa.on('error', () => undefined);
    clients.push(withCa);
    await withCa.connect();
    expect(await withCa.ping()).toBe('PONG');
  });
});
