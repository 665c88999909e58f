import type { NetworkInterfaceInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { isValidId } from '../protocol/limits.js';
import {
  defaultMemberId,
  deriveMemberId,
  firstExternalIpv4,
  type MemberIdEnvironment,
} from './member-id.js';

function info(address: string, family: 'IPv4' | 'IPv6', internal: boolean): NetworkInterfaceInfo {
  return { address, family, internal, netmask: '', mac: '', cidr: null } as NetworkInterfaceInfo;
}

const interfaces = {
  lo: [info('127.0.0.1', 'IPv4', true)],
  eth0: [info('fe80::1', 'IPv6', false), info('10.1.2.3', 'IPv4', false)],
  eth1: [info('192.168.0.9', 'IPv4', false)],
};

const base: MemberIdEnvironment = { env: {}, interfaces, hostname: 'node-a', pid: 42 };

describe('deriveMemberId', () => {
  it('prefers POD_IP and POD_NAME', () => {
    const id = deriveMemberId(
      { ...base, env: { POD_IP: '10.9.9.9', POD_NAME: 'billing-7f9c', HOSTNAME: 'h' } },
      3,
    );
    expect(id).toBe('10.9.9.9_billing-7f9c_42_3');
  });

  it('falls back to the first non-internal IPv4 address, then HOSTNAME, then os.hostname()', () => {
    expect(deriveMemberId({ ...base, env: { HOSTNAME: 'pod-h' } }, 0)).toBe('10.1.2.3_pod-h_42_0');
    expect(deriveMemberId(base, 0)).toBe('10.1.2.3_node-a_42_0');
    expect(deriveMemberId({ ...base, interfaces: { lo: interfaces.lo } }, 0)).toBe(
      'no-ipv4_node-a_42_0',
    );
  });

  it('differs for two runtimes of one process', () => {
    expect(deriveMemberId(base, 0)).not.toBe(deriveMemberId(base, 1));
  });

  it('sanitises to printable ASCII and stays within 255 characters', () => {
    const id = deriveMemberId(
      {
        ...base,
        env: { POD_IP: 'fe80::1 %eth0', POD_NAME: `näme with spaces ${'x'.repeat(400)}` },
      },
      7,
    );
    expect(isValidId(id)).toBe(true);
    expect(id.length).toBeLessThanOrEqual(255);
    expect(id.startsWith('fe80::1_%eth0_n_me_with_spaces_')).toBe(true);
    expect(id.endsWith('_42_7')).toBe(true);
  });

  it('ignores blank environment values', () => {
    expect(deriveMemberId({ ...base, env: { POD_IP: '  ', POD_NAME: '' } }, 0)).toBe(
      '10.1.2.3_node-a_42_0',
    );
  });
});

describe('firstExternalIpv4', () => {
  it('skips internal and IPv6 addresses', () => {
    expect(firstExternalIpv4(interfaces)).toBe('10.1.2.3');
    expect(firstExternalIpv4({})).toBeUndefined();
  });
});

describe('defaultMemberId', () => {
  it('gives a valid id with this process id, different on every call', () => {
    const first = defaultMemberId();
    const second = defaultMemberId();
    expect(isValidId(first)).toBe(true);
    expect(first).toContain(`_${process.pid}_`);
    expect(first).not.toBe(second);
  });
});
