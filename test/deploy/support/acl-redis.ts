import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../support/free-port.js';
import { spawnRedisServer, type RedisServerProcess } from '../../support/redis-server-process.js';
import { createTempDir, type TempDir } from '../../support/temp-dir.js';
import { DOCKER_DIR } from './deploy-files.js';

/** The shipped generator of the ACL file (docker/redis/users-acl.sh). */
export const USERS_ACL_SCRIPT = join(DOCKER_DIR, 'redis', 'users-acl.sh');

/** The role users the generator writes, and the test passwords they get. */
export const ACL_PASSWORDS = {
  'rsc-coordinator': 'test-coordinator-redis-password',
  'rsc-worker': 'test-worker-redis-password',
  'rsc-producer': 'test-producer-redis-password',
} as const;
export type AclUser = keyof typeof ACL_PASSWORDS;

/** A user the tests add to inspect the server (not part of the shipped file). */
const ADMIN = { user: 'test-admin', password: 'test-admin-redis-password' } as const;

/** Runs the shipped generator for `prefix` with `passwords` (what an operator runs). */
export function renderUsersAcl(
  prefix: string,
  passwords: Readonly<Record<AclUser, string>> = ACL_PASSWORDS,
): string {
  return execFileSync('sh', [USERS_ACL_SCRIPT], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      KEY_PREFIX: prefix,
      REDIS_COORDINATOR_PASSWORD: passwords['rsc-coordinator'],
      REDIS_WORKER_PASSWORD: passwords['rsc-worker'],
      REDIS_PRODUCER_PASSWORD: passwords['rsc-producer'],
    },
  });
}

/** A private `redis-server` that loads the generated ACL file (plus a test admin user). */
export interface AclRedis {
  readonly server: RedisServerProcess;
  readonly port: number;
  /** `redis://<user>:<password>@127.0.0.1:<port>` of a role user. */
  url(user: AclUser): string;
  /** The test admin's URL (every key and command). */
  readonly adminUrl: string;
  /** The TLS port when started with `tls`. */
  readonly tlsPort: number | undefined;
  stop(): Promise<void>;
}

/** TLS material of {@link startAclRedis}: PEM file paths. */
export interface RedisTlsFiles {
  readonly cert: string;
  readonly key: string;
  readonly ca: string;
}

/** Starts `redis-server` with the generated ACL file for `prefix` (and a TLS port with `tls`). */
export async function startAclRedis(prefix: string, tls?: RedisTlsFiles): Promise<AclRedis> {
  const dir: TempDir = createTempDir('acl-redis');
  const aclFile = join(dir.path, 'users.acl');
  writeFileSync(
    aclFile,
    `${renderUsersAcl(prefix)}user ${ADMIN.user} on >${ADMIN.password} ~* &* +@all\n`,
  );
  const port = await freePort();
  const tlsPort = tls ? await freePort() : undefined;
  const adminUrl = `redis://${ADMIN.user}:${ADMIN.password}@127.0.0.1:${port}`;
  try {
    const server = await spawnRedisServer({
      port,
      dir: dir.path,
      probeUrl: adminUrl,
      args: [
        '--aclfile',
        aclFile,
        '--save',
        '',
        '--appendonly',
        'no',
        ...(tls && tlsPort !== undefined
          ? [
              '--tls-port',
              String(tlsPort),
              '--tls-cert-file',
              tls.cert,
              '--tls-key-file',
              tls.key,
              '--tls-ca-cert-file',
              tls.ca,
              '--tls-auth-clients',
              'no',
            ]
          : []),
      ],
    });
    return {
      server,
      port,
      tlsPort,
      adminUrl,
      url: (user) => `redis://${user}:${ACL_PASSWORDS[user]}@127.0.0.1:${port}`,
      async stop() {
        await server.stop();
        dir.remove();
      },
    };
  } catch (error) {
    dir.remove();
    throw error;
  }
}
