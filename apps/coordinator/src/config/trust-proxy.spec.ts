import { describe, expect, it } from 'vitest';
import { loadCoordinatorConfig } from './coordinator-config.js';
import { InvalidConfigError } from './invalid-config.error.js';
import { fastifyTrustProxy } from './trust-proxy.js';

const base = { COORDINATOR_TOKEN: 'a-member-token-of-32-characters!' };

describe('TRUST_PROXY', () => {
  it('is off by default: the socket address is the client host', () => {
    expect(loadCoordinatorConfig(base).trustProxy).toBe(false);
    expect(loadCoordinatorConfig({ ...base, TRUST_PROXY: '' }).trustProxy).toBe(false);
    expect(loadCoordinatorConfig({ ...base, TRUST_PROXY: 'false' }).trustProxy).toBe(false);
  });

  it('takes true, a hop count, or addresses and CIDR ranges of trusted proxies', () => {
    expect(loadCoordinatorConfig({ ...base, TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadCoordinatorConfig({ ...base, TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(
      loadCoordinatorConfig({ ...base, TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,fd00::/8' })
        .trustProxy,
    ).toEqual(['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8']);
  });

  it.each([
    ['yes'],
    ['0'],
    ['10.0.0.0/33'],
    ['300.1.1.1'],
    ['10.0.0.1,,'],
    ['::1/129'],
    ['proxy.internal'],
  ])('refuses %j, naming the variable', (value) => {
    let error: unknown;
    try {
      loadCoordinatorConfig({ ...base, TRUST_PROXY: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidConfigError);
    expect(String((error as Error).message)).toContain('TRUST_PROXY');
    expect(String((error as Error).message)).toContain(JSON.stringify(value));
  });

  it('a hop count trusts that many proxies in front of the server', () => {
    const trust = fastifyTrustProxy(2);
    if (typeof trust !== 'function') throw new Error('expected a predicate');
    expect([0, 1, 2].map((hop) => trust('10.0.0.1', hop))).toEqual([true, true, false]);
  });
});
