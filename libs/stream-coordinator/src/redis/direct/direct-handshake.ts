import type { DirectReaderEndpoint } from './direct-reader-endpoint.js';
import type { CommandArgument } from './resp-command.js';

/** One command a direct connection sends before any of its caller's. */
export interface HandshakeStep {
  readonly args: readonly CommandArgument[];
  /** What it is, for an error message (`AUTH as alice`, `SELECT 2`). */
  readonly what: string;
  /** Whether an error reply to it ends the connection (`fatal`) or is passed over (`ignore`). */
  failure(reply: string): 'fatal' | 'ignore';
}

/**
 * `AUTH` replies ioredis 5 passes over with a warning rather than failing the connection: a
 * password given to a server (or `default` user) that has none, and a user name given to a Redis
 * before 6. Followed here, so a `redis` option that works for the other connections works for
 * the readers too.
 */
const TOLERATED_AUTH_REPLIES = [
  'no password is set',
  'without any password configured for the default user',
  "wrong number of arguments for 'auth' command",
];

/**
 * The handshake of a direct connection to `endpoint`, in order: `AUTH` (as ioredis 5 sends it:
 * `AUTH user password` when there is a user, even with an empty password; `AUTH password` when
 * there is only a password; none otherwise), `SELECT` for a database other than 0, and
 * `CLIENT SETNAME`. A refused `AUTH` (but for {@link TOLERATED_AUTH_REPLIES}) or `SELECT` is
 * fatal: no command may run as another user or in database 0 by mistake (ioredis stays in
 * database 0 when `SELECT` fails); a refused `CLIENT SETNAME` (an ACL without
 * `+client|setname`) is passed over, as ioredis does.
 */
export function handshakeSteps(endpoint: DirectReaderEndpoint): HandshakeStep[] {
  const steps: HandshakeStep[] = [];
  const { auth, db, connectionName } = endpoint;
  if (auth !== undefined) {
    steps.push({
      args: ['AUTH', ...auth],
      what: auth.length === 2 ? `AUTH as ${auth[0]}` : 'AUTH',
      failure: (reply) =>
        TOLERATED_AUTH_REPLIES.some((text) => reply.includes(text)) ? 'ignore' : 'fatal',
    });
  }
  if (db !== 0) steps.push({ args: ['SELECT', db], what: `SELECT ${db}`, failure: () => 'fatal' });
  if (connectionName !== undefined) {
    steps.push({
      args: ['CLIENT', 'SETNAME', connectionName],
      what: 'CLIENT SETNAME',
      failure: () => 'ignore',
    });
  }
  return steps;
}
