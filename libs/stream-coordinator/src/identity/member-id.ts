import { hostname, networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { PROTOCOL_LIMITS } from '../protocol/limits.js';

/**
 * How the member id is obtained, after the module options are resolved:
 * - `fixed`: the id is known at bootstrap (`source` says where it came from);
 * - `coordinator`: the runtime asks the coordinator for one
 *   (`POST /v1/groups/{groupId}/member-ids`) before it joins.
 */
export type MemberIdStrategy =
  | {
      readonly kind: 'fixed';
      readonly id: string;
      readonly source: 'option' | 'factory' | 'default';
    }
  | { readonly kind: 'coordinator' };

/**
 * What the default member id is derived from. Passed explicitly so derivation is a pure function.
 */
export interface MemberIdEnvironment {
  /** Environment variables (`POD_IP`, `POD_NAME`, `HOSTNAME`). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** `os.networkInterfaces()`. */
  readonly interfaces: Readonly<Record<string, readonly NetworkInterfaceInfo[] | undefined>>;
  /** `os.hostname()`, used when neither `POD_NAME` nor `HOSTNAME` is set. */
  readonly hostname: string;
  /** The process id. */
  readonly pid: number;
}

/** Placeholder for the address part when no IPv4 address is found. */
const NO_ADDRESS = 'no-ipv4';

/**
 * Replaces every character outside printable ASCII (0x21–0x7E, the id rule of
 * docs/protocol.md §2.5) with `_`.
 */
export function sanitizeIdPart(value: string): string {
  return value.replace(/[^\x21-\x7e]/g, '_');
}

/**
 * The first non-internal IPv4 address, or `undefined`.
 *
 * @internal
 */
export function firstExternalIpv4(
  interfaces: MemberIdEnvironment['interfaces'],
): string | undefined {
  for (const name of Object.keys(interfaces)) {
    for (const info of interfaces[name] ?? []) {
      // Node 18.0–18.3 reported `family` as a number; accept both spellings.
      const family: unknown = info.family;
      if ((family === 'IPv4' || family === 4) && !info.internal) return info.address;
    }
  }
  return undefined;
}

/**
 * Derives a member id from the pod-IP context (docs/protocol.md §7):
 * `<POD_IP or first external IPv4>_<POD_NAME or HOSTNAME or hostname>_<pid>_<sequence>`,
 * e.g. `10.1.2.3_billing-7f9c-x2k_1_0`. Each part is sanitised to printable ASCII and the name
 * part is shortened so the whole id stays within 255 characters.
 *
 * @param sequence distinguishes runtimes of one process (see {@link nextMemberIdSequence}).
 */
export function deriveMemberId(environment: MemberIdEnvironment, sequence: number): string {
  const { env } = environment;
  const address = sanitizeIdPart(
    nonEmpty(env.POD_IP) ?? firstExternalIpv4(environment.interfaces) ?? NO_ADDRESS,
  ).slice(0, 64);
  const name = sanitizeIdPart(
    nonEmpty(env.POD_NAME) ?? nonEmpty(env.HOSTNAME) ?? nonEmpty(environment.hostname) ?? 'host',
  );
  const tail = `_${environment.pid}_${sequence}`;
  const room = PROTOCOL_LIMITS.maxIdLength - address.length - 1 - tail.length;
  return `${address}_${name.slice(0, Math.max(1, room))}${tail}`;
}

/*
 * Deliberate exception to the "no process-wide state" rule: the sequence must be shared by every
 * application in the process, because its only job is to make two runtimes of one process (two
 * Nest apps, or one app created twice in tests) derive different ids. A per-application sequence
 * would start at 0 in each app and collide. It holds no application state, only ever grows, and
 * no code reads it except `nextMemberIdSequence`, so apps stay independent of each other.
 */
let memberIdSequence = 0;

/**
 * Returns the next value of the per-process member id sequence (0, 1, 2, …).
 *
 * @internal
 */
export function nextMemberIdSequence(): number {
  return memberIdSequence++;
}

/**
 * The default member id of a new runtime in this process: {@link deriveMemberId} over the real
 * environment and the next per-process sequence number.
 */
export function defaultMemberId(): string {
  return deriveMemberId(
    { env: process.env, interfaces: networkInterfaces(), hostname: hostname(), pid: process.pid },
    nextMemberIdSequence(),
  );
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value.trim() : undefined;
}
