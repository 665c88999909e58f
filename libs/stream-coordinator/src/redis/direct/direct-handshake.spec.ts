import { describe, expect, it } from 'vitest';
import { handshakeSteps } from './direct-handshake.js';
import type { DirectReaderEndpoint } from './direct-reader-endpoint.js';

const base: DirectReaderEndpoint = {
  socket: { host: 'h', port: 1 },
  db: 0,
  connectTimeoutMs: 1000,
  keepAliveMs: 0,
  noDelay: true,
};

describe('handshakeSteps', () => {
  it('sends AUTH, SELECT and CLIENT SETNAME in that order, only what is set', () => {
    expect(handshakeSteps(base)).toEqual([]);
    const steps = handshakeSteps({ ...base, auth: ['u', 'p'], db: 2, connectionName: 'n' });
    expect(steps.map((s) => s.args)).toEqual([
      ['AUTH', 'u', 'p'],
      ['SELECT', 2],
      ['CLIENT', 'SETNAME', 'n'],
    ]);
    expect(steps.map((s) => s.what)).toEqual(['AUTH as u', 'SELECT 2', 'CLIENT SETNAME']);
  });

  it('a refused AUTH is fatal, but for the replies ioredis passes over', () => {
    const [auth] = handshakeSteps({ ...base, auth: ['p'] });
    expect(auth?.failure('WRONGPASS invalid username-password pair or user is disabled.')).toBe(
      'fatal',
    );
    expect(auth?.failure('NOPERM this user has no permissions')).toBe('fatal');
    expect(
      auth?.failure(
        'ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?',
      ),
    ).toBe('ignore');
    expect(auth?.failure('ERR Client sent AUTH, but no password is set')).toBe('ignore');
    expect(auth?.failure("ERR wrong number of arguments for 'auth' command")).toBe('ignore');
  });

  it('a refused SELECT is fatal; a refused CLIENT SETNAME is passed over', () => {
    const [select, name] = handshakeSteps({ ...base, db: 1, connectionName: 'n' });
    expect(select?.failure('ERR DB index is out of range')).toBe('fatal');
    expect(
      name?.failure("NOPERM this user has no permissions to run the 'client|setname' command"),
    ).toBe('ignore');
  });
});
