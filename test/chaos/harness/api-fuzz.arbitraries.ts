import fc from 'fast-check';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import type { RawRequest } from './raw-http.js';

/** A generated request, with what it is meant to exercise. */
export interface FuzzRequest {
  /** What was done to it (for failure messages). */
  readonly label: string;
  readonly request: RawRequest;
  /** Whether a refusal must carry the protocol's JSON error body (false: framing the HTTP parser refuses). */
  readonly expectJsonError: boolean;
}

/** Names of the fuzz fixture's state (created by the spec before fuzzing). */
export const FUZZ_FIXTURE = {
  group: 'g',
  emptyGroup: 'e',
  stream: 'orders',
  member: 'm1',
  otherMember: 'm2',
} as const;

/** A value sent as raw JSON text (a number literal JSON.stringify cannot write, say). */
class RawJson {
  constructor(readonly text: string) {}
}

type Field = 'id' | 'epoch' | 'posInt' | 'names' | 'owned' | 'shards' | 'mode' | 'bool' | 'int';

/** A valid request of one route, the starting point of the mutations. */
interface Template {
  readonly name: string;
  readonly method: string;
  /** Path with `{g}`, `{s}`, `{m}` placeholders. */
  readonly path: string;
  readonly query?: ReadonlyArray<readonly [string, string]>;
  /** Query parameters the route knows (default `limit`, `after`); others are refused. */
  readonly queryKeys?: readonly string[];
  readonly body?: Readonly<Record<string, unknown>>;
  readonly admin: boolean;
  /** Body fields: kind and whether required. */
  readonly fields?: Readonly<Record<string, { readonly kind: Field; readonly required: boolean }>>;
  /** Methods the route's path serves (a swap picks another). */
  readonly methods: readonly string[];
  /** The join rules apply (memberEpoch 0: ownedShards must be [], subscribedStreams non-empty). */
  readonly join?: boolean;
  /** An empty body counts as `{}` on this route. */
  readonly emptyBodyAllowed?: boolean;
}

const ID = { kind: 'id', required: true } as const;
const OPT_ID = { kind: 'id', required: false } as const;

const TEMPLATES: readonly Template[] = [
  {
    name: 'heartbeat',
    method: 'POST',
    path: '/v1/groups/{g}/heartbeat',
    body: { memberId: FUZZ_FIXTURE.member, memberEpoch: 1 },
    admin: false,
    fields: { memberId: ID, memberEpoch: { kind: 'epoch', required: true } },
    methods: ['POST'],
  },
  {
    name: 'full heartbeat',
    method: 'POST',
    path: '/v1/groups/{g}/heartbeat',
    body: {
      memberId: FUZZ_FIXTURE.member,
      memberEpoch: 1,
      rebalanceTimeoutMs: 60_000,
      subscribedStreams: [FUZZ_FIXTURE.stream],
      ownedShards: [{ stream: FUZZ_FIXTURE.stream, shards: [0, 1] }],
    },
    admin: false,
    fields: {
      memberId: ID,
      memberEpoch: { kind: 'epoch', required: true },
      rebalanceTimeoutMs: { kind: 'posInt', required: false },
      subscribedStreams: { kind: 'names', required: false },
      ownedShards: { kind: 'owned', required: false },
      instanceId: OPT_ID,
      rackId: OPT_ID,
      assignor: OPT_ID,
    },
    methods: ['POST'],
  },
  {
    name: 'join',
    method: 'POST',
    path: '/v1/groups/{g}/heartbeat',
    body: {
      memberId: 'fuzz-joiner',
      memberEpoch: 0,
      rebalanceTimeoutMs: 60_000,
      subscribedStreams: [FUZZ_FIXTURE.stream],
      ownedShards: [],
      rackId: 'r1',
    },
    admin: false,
    fields: {
      memberId: ID,
      memberEpoch: { kind: 'epoch', required: true },
      rebalanceTimeoutMs: { kind: 'posInt', required: true },
      subscribedStreams: { kind: 'names', required: true },
      ownedShards: { kind: 'owned', required: true },
      instanceId: OPT_ID,
      rackId: OPT_ID,
      assignor: OPT_ID,
    },
    methods: ['POST'],
    join: true,
  },
  {
    name: 'leave',
    method: 'POST',
    path: '/v1/groups/{g}/leave',
    body: { memberId: FUZZ_FIXTURE.otherMember },
    admin: false,
    fields: {
      memberId: ID,
      instanceId: OPT_ID,
      temporary: { kind: 'bool', required: false },
      memberEpoch: { kind: 'int', required: false },
    },
    methods: ['POST'],
  },
  {
    name: 'member-ids',
    method: 'POST',
    path: '/v1/groups/{g}/member-ids',
    body: {},
    admin: false,
    fields: {},
    methods: ['POST'],
    emptyBodyAllowed: true,
  },
  {
    name: 'create stream',
    method: 'PUT',
    path: '/v1/streams/{s}',
    body: { shards: 4 },
    admin: true,
    fields: { shards: { kind: 'shards', required: true } },
    methods: ['GET', 'PUT'],
  },
  {
    name: 'reshard',
    method: 'POST',
    path: '/v1/streams/{s}/reshard',
    body: { shards: 6 },
    admin: true,
    fields: { shards: { kind: 'shards', required: true }, mode: { kind: 'mode', required: false } },
    methods: ['POST'],
  },
  {
    name: 'remove member',
    method: 'DELETE',
    path: '/v1/groups/{g}/members/{m}',
    admin: true,
    methods: ['DELETE'],
  },
  {
    name: 'delete group',
    method: 'DELETE',
    path: '/v1/groups/{e}',
    admin: true,
    methods: ['GET', 'DELETE'],
  },
  {
    name: 'events',
    method: 'GET',
    path: '/v1/groups/{g}/events',
    query: [
      ['limit', '10'],
      ['after', '0-0'],
    ],
    admin: false,
    methods: ['GET'],
  },
  {
    name: 'describe',
    method: 'GET',
    path: '/v1/groups/{g}',
    admin: false,
    methods: ['GET', 'DELETE'],
  },
  {
    name: 'routing',
    method: 'GET',
    path: '/v1/streams/{s}',
    admin: false,
    methods: ['GET', 'PUT'],
  },
  {
    name: 'dead letters',
    method: 'GET',
    path: '/v1/streams/{s}/dead-letters',
    query: [
      ['limit', '10'],
      ['after', '0-0'],
    ],
    queryKeys: ['limit', 'after', 'group', 'reason', 'error', 'from', 'to', 'replayed'],
    admin: false,
    methods: ['GET'],
  },
];

/** One change that makes a request invalid (or, for `neutral`, leaves its validity alone). */
type Mutation =
  | { readonly kind: 'token'; readonly auth: string | null; readonly label: string }
  | { readonly kind: 'path-name'; readonly slot: 'g' | 's' | 'm' | 'e'; readonly value: string }
  | { readonly kind: 'method'; readonly method: string }
  | { readonly kind: 'not-an-object'; readonly body: string }
  | { readonly kind: 'malformed'; readonly body: string; readonly why: string }
  | { readonly kind: 'unknown-field'; readonly field: string; readonly value: unknown }
  | { readonly kind: 'missing'; readonly field: string }
  | { readonly kind: 'bad-value'; readonly field: string; readonly value: unknown }
  | { readonly kind: 'content-type'; readonly value: string | null }
  | { readonly kind: 'oversize' }
  | { readonly kind: 'query'; readonly query: ReadonlyArray<readonly [string, string]> }
  | { readonly kind: 'duplicate-auth' }
  | { readonly kind: 'framing'; readonly how: 'te-and-cl' | 'two-lengths' | 'bad-length' };

const printable = (min: number, max: number): fc.Arbitrary<string> =>
  fc.string({
    unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
    minLength: min,
    maxLength: max,
  });

/** A JSON value that is not a string. */
const notString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
);
/** A JSON value that is not a number. */
const notNumber = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.constant({}),
);
/** Number literals a schema must refuse for an integer field. */
const badIntegerLiteral = fc.constantFrom(
  new RawJson('1e400'),
  new RawJson('-1e400'),
  new RawJson('0.5'),
  new RawJson('1.000001'),
  new RawJson('9007199254740993'),
);
/** Strings that are not ids (1–255 printable ASCII). */
const invalidId = fc.oneof(
  fc.constant(''),
  printable(256, 300),
  fc
    .tuple(
      printable(0, 10),
      fc.constantFrom(' ', '\t', 'é', '\u0000', '\u007f', '\n', '💥'),
      printable(0, 10),
    )
    .map(([a, c, b]) => a + c + b),
);
/** Strings that are not group or stream names (1–128 of [A-Za-z0-9._-]). */
const invalidName = fc.oneof(
  fc.constant(''),
  fc.stringMatching(/^[a-z]{129,140}$/),
  fc
    .tuple(
      fc.stringMatching(/^[a-z0-9]{0,6}$/),
      fc.constantFrom(' ', '/', ':', '@', 'é', '*', '%', '#', '?', '+', '~', '\u0000'),
      fc.stringMatching(/^[a-z0-9]{0,6}$/),
    )
    .map(([a, c, b]) => a + c + b),
);
/** A path segment that is not a valid name (percent-encoded as a client would). */
const invalidNameSegment = invalidName.map((name) => encodeURIComponent(name));

function badValue(kind: Field, join: boolean): fc.Arbitrary<unknown> {
  switch (kind) {
    case 'id':
      return fc.oneof(notString, invalidId);
    case 'epoch':
      return fc.oneof(
        notNumber,
        badIntegerLiteral,
        fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -3 }),
        fc.integer({ min: 2_147_483_648, max: Number.MAX_SAFE_INTEGER }),
      );
    case 'posInt':
      return fc.oneof(
        notNumber,
        badIntegerLiteral,
        fc.integer({ min: Number.MIN_SAFE_INTEGER, max: 0 }),
        fc.integer({ min: 2_147_483_648, max: Number.MAX_SAFE_INTEGER }),
      );
    case 'shards':
      return fc.oneof(
        notNumber,
        badIntegerLiteral,
        fc.integer({ min: -1000, max: 0 }),
        fc.integer({ min: 1025, max: 1_000_000_000 }),
      );
    case 'int':
      return fc.oneof(notNumber, fc.constantFrom(new RawJson('0.5'), new RawJson('1e400')));
    case 'bool':
      return fc.oneof(
        fc.string({ maxLength: 5 }),
        fc.integer(),
        fc.constant(null),
        fc.constant([]),
      );
    case 'mode':
      return fc.oneof(notString, fc.constantFrom('', 'fast', 'STRICT', 'strict ', 'relaxed\u0000'));
    case 'names':
      return fc.oneof(
        fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.constant(null), fc.constant({})),
        fc.array(fc.oneof(invalidName, notString), { minLength: 1, maxLength: 3 }),
        fc.tuple(fc.constant(FUZZ_FIXTURE.stream), fc.oneof(invalidName, notString)).map((x) => x),
        ...(join ? [fc.constant([])] : []),
      );
    case 'owned':
      return fc.oneof(
        fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.constant(null), fc.constant({})),
        fc.constant([{ shards: [] }]),
        fc.constant([{ stream: FUZZ_FIXTURE.stream }]),
        fc.constant([{ stream: FUZZ_FIXTURE.stream, shards: [0, 0] }]),
        fc.constant([
          { stream: FUZZ_FIXTURE.stream, shards: [] },
          { stream: FUZZ_FIXTURE.stream, shards: [] },
        ]),
        fc.constant([{ stream: FUZZ_FIXTURE.stream, shards: [], extra: 1 }]),
        fc.record({ stream: invalidName, shards: fc.constant([] as number[]) }).map((e) => [e]),
        fc
          .oneof(
            fc.integer({ max: -1 }),
            fc.constant(0.5),
            fc.string({ maxLength: 3 }),
            fc.constant(null),
          )
          .map((bad) => [{ stream: FUZZ_FIXTURE.stream, shards: [bad] }]),
        fc.constant([{ stream: FUZZ_FIXTURE.stream, shards: [new RawJson('1e400')] }]),
        fc.constant([{ stream: FUZZ_FIXTURE.stream, shards: 'all' }]),
        ...(join ? [fc.constant([{ stream: FUZZ_FIXTURE.stream, shards: [0] }])] : []),
      );
  }
}

/** Bodies that do not parse as JSON. */
const malformedJson = fc.oneof(
  fc.constant({ body: '', why: 'empty' }),
  fc.constant({ body: '{', why: 'truncated' }),
  fc.constant({ body: '{"memberId": "m1",', why: 'truncated' }),
  fc.constant({ body: '{"a":1}}', why: 'trailing' }),
  fc.constant({ body: "{'memberId': 'm1'}", why: 'single quotes' }),
  fc.constant({ body: '{"memberId": "m1" "memberEpoch": 1}', why: 'no comma' }),
  fc.constant({ body: '{"memberId": NaN}', why: 'NaN' }),
  fc.constant({ body: '\u00ef\u00bb\u00bf{}', why: 'mojibake BOM' }),
  fc
    .integer({ min: 1000, max: 20_000 })
    .map((n) => ({ body: '['.repeat(n), why: `${n} open brackets` })),
  fc.integer({ min: 1000, max: 5000 }).map((n) => ({
    body: `${'{"a":'.repeat(n)}1${'}'.repeat(n - 1)}`,
    why: `${n} nested objects, one brace short`,
  })),
  fc
    .string({ minLength: 1, maxLength: 40 })
    .filter((s) => !parses(s))
    .map((s) => ({ body: s, why: 'random text' })),
  fc
    .uint8Array({ minLength: 1, maxLength: 64 })
    .map((bytes) => Buffer.from(bytes).toString('latin1'))
    .filter((s) => !parses(s))
    .map((s) => ({ body: s, why: 'random bytes' })),
);

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The invalidating mutations that apply to `t`. */
function mutationsOf(t: Template): fc.Arbitrary<Mutation> {
  const options: Array<fc.Arbitrary<Mutation>> = [
    fc.constantFrom<Mutation>(
      { kind: 'token', auth: null, label: 'no token' },
      { kind: 'token', auth: 'Bearer not-the-token', label: 'wrong token' },
      {
        kind: 'token',
        auth: `Basic ${Buffer.from(`x:${TEST_TOKENS.admin}`).toString('base64')}`,
        label: 'Basic scheme',
      },
      { kind: 'token', auth: `Bearer ${TEST_TOKENS.admin}x`, label: 'token with a suffix' },
      { kind: 'token', auth: 'Bearer', label: 'scheme only' },
      { kind: 'token', auth: TEST_TOKENS.admin, label: 'bare token' },
      ...(t.admin
        ? [
            {
              kind: 'token',
              auth: `Bearer ${TEST_TOKENS.member}`,
              label: 'member token on an admin route',
            } as const,
          ]
        : []),
    ),
    fc.constant<Mutation>({ kind: 'duplicate-auth' }),
    fc
      .constantFrom('te-and-cl', 'two-lengths', 'bad-length')
      .map((how): Mutation => ({ kind: 'framing', how })),
    fc
      .constantFrom(
        ...['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'].filter(
          (m) => !t.methods.includes(m),
        ),
      )
      .map((method): Mutation => ({ kind: 'method', method })),
  ];
  const slots = (['g', 's', 'e'] as const).filter((s) => t.path.includes(`{${s}}`));
  for (const slot of slots) {
    options.push(invalidNameSegment.map((value): Mutation => ({ kind: 'path-name', slot, value })));
  }
  if (t.path.includes('{m}')) {
    options.push(
      fc
        .oneof(invalidId, fc.constantFrom('ghost', 'm9', 'nobody-here'))
        .filter((id) => id !== '')
        .map((id): Mutation => ({ kind: 'path-name', slot: 'm', value: encodeURIComponent(id) })),
    );
  }
  if (t.query) {
    options.push(
      fc
        .oneof(
          fc
            .constantFrom('0', '1001', '-1', 'ten', '1.5', '', '99999999')
            .map((v) => [['limit', v] as const]),
          fc.constantFrom('x', '1-', '-1', '1-2-3', '١-٠', '').map((v) => [['after', v] as const]),
          fc.constant([['limit', '1'] as const, ['limit', '2'] as const]),
          fc
            .stringMatching(/^[a-z]{1,8}$/)
            .filter((k) => !(t.queryKeys ?? ['limit', 'after']).includes(k))
            .map((k) => [[k, '1'] as const]),
        )
        .map((query): Mutation => ({ kind: 'query', query })),
    );
  }
  if (t.body !== undefined) {
    const fields = t.fields ?? {};
    options.push(
      fc
        .oneof(
          fc.constant('[]'),
          fc.constant('null'),
          fc.constant('"text"'),
          fc.constant('42'),
          fc.constant('true'),
          fc.constant('[{"memberId":"m1"}]'),
        )
        .map((body): Mutation => ({ kind: 'not-an-object', body })),
      malformedJson
        .filter(({ body }) => !(t.emptyBodyAllowed === true && body === ''))
        .map(({ body, why }): Mutation => ({ kind: 'malformed', body, why })),
      fc
        .tuple(
          fc.oneof(
            fc.constantFrom(
              '__proto__',
              'constructor',
              'prototype',
              'toString',
              'hasOwnProperty',
              'memberid',
              'MemberId',
              ' memberId',
              'shards ',
            ),
            fc.stringMatching(/^[a-zA-Z_$][a-zA-Z0-9_$]{0,12}$/),
          ),
          fc.jsonValue({ maxDepth: 2 }),
        )
        .filter(([field]) => !(field in fields))
        .map(([field, value]): Mutation => ({ kind: 'unknown-field', field, value })),
      fc
        .constantFrom<string | null>(
          null,
          '',
          'text/plain',
          'application/xml',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/jsonx',
          'json',
          'text/json',
          'application/octet-stream',
        )
        .map((value): Mutation => ({ kind: 'content-type', value })),
      fc.constant<Mutation>({ kind: 'oversize' }),
    );
    const required = Object.entries(fields)
      .filter(([, f]) => f.required)
      .map(([name]) => name);
    if (required.length > 0) {
      options.push(
        fc.constantFrom(...required).map((field): Mutation => ({ kind: 'missing', field })),
      );
    }
    for (const [name, spec] of Object.entries(fields)) {
      options.push(
        badValue(spec.kind, t.join === true).map((value): Mutation => ({
          kind: 'bad-value',
          field: name,
          value,
        })),
      );
    }
  }
  return fc.oneof(...options);
}

/** Changes that keep a request as valid (or invalid) as it was. */
const neutral = fc.oneof(
  fc
    .tuple(fc.stringMatching(/^x-[a-z0-9-]{1,16}$/), printable(0, 40))
    .map(([name, value]) => ({ header: [name, value] as const })),
  fc.integer({ min: 1, max: 64 }).map((chunked) => ({ chunked })),
  fc
    .constantFrom('application/json; charset=utf-8', 'Application/JSON', 'application/vnd.rsc+json')
    .map((contentType) => ({ contentType })),
);

/** The JSON text of `body` (RawJson values written as their raw text). */
function serialize(body: Readonly<Record<string, unknown>>): string {
  const raws: string[] = [];
  const text = JSON.stringify(body, (_key, value: unknown) => {
    if (value instanceof RawJson) {
      raws.push(value.text);
      return `@@RAW${raws.length - 1}@@`;
    }
    return value;
  });
  return text.replace(/"@@RAW(\d+)@@"/g, (_m, i: string) => raws[Number(i)] as string);
}

function build(t: Template, mutation: Mutation, extras: readonly NeutralChange[]): FuzzRequest {
  const names: Record<string, string> = {
    g: FUZZ_FIXTURE.group,
    s: FUZZ_FIXTURE.stream,
    m: FUZZ_FIXTURE.otherMember,
    e: FUZZ_FIXTURE.emptyGroup,
  };
  let method = t.method;
  let auth: string | null = `Bearer ${t.admin ? TEST_TOKENS.admin : TEST_TOKENS.member}`;
  let query = t.query;
  let contentType: string | null = t.body !== undefined ? 'application/json' : null;
  let bodyText: string | undefined;
  let body: Record<string, unknown> | undefined = t.body ? { ...t.body } : undefined;
  let label = `${t.name}: `;
  switch (mutation.kind) {
    case 'token':
      auth = mutation.auth;
      label += mutation.label;
      break;
    case 'path-name':
      names[mutation.slot] = mutation.value;
      label += `${mutation.slot} = ${JSON.stringify(mutation.value.slice(0, 40))}`;
      break;
    case 'method':
      method = mutation.method;
      label += `method ${method}`;
      break;
    case 'query':
      query = mutation.query;
      label += `query ${JSON.stringify(mutation.query)}`;
      break;
    case 'not-an-object':
      bodyText = mutation.body;
      label += `body ${mutation.body}`;
      break;
    case 'malformed':
      bodyText = mutation.body;
      label += `malformed body (${mutation.why})`;
      break;
    case 'unknown-field':
      Object.defineProperty(body, mutation.field, {
        value: mutation.value,
        enumerable: true,
        configurable: true,
        writable: true,
      });
      label += `unknown field ${JSON.stringify(mutation.field)}`;
      break;
    case 'missing':
      delete body?.[mutation.field];
      label += `without ${mutation.field}`;
      break;
    case 'bad-value':
      if (body) body[mutation.field] = mutation.value;
      label += `${mutation.field} = ${describeValue(mutation.value)}`;
      break;
    case 'content-type':
      contentType = mutation.value;
      label += `content type ${JSON.stringify(mutation.value)}`;
      break;
    case 'oversize':
      if (body) body.memberId = 'p'.repeat(1024 * 1024 + 16);
      label += 'body over 1 MiB';
      break;
    case 'duplicate-auth':
      label += 'two Authorization headers, the first one wrong';
      break;
    case 'framing':
      label += `framing: ${mutation.how}`;
      break;
  }
  const headers: Array<readonly [string, string]> = [];
  if (mutation.kind === 'duplicate-auth') headers.push(['Authorization', 'Bearer not-the-token']);
  let chunked: number | undefined;
  for (const extra of extras) {
    if ('header' in extra) headers.push(extra.header);
    else if ('chunked' in extra) chunked = extra.chunked;
    else if (contentType === 'application/json' && mutation.kind !== 'content-type')
      contentType = extra.contentType;
  }
  if (auth !== null) headers.push(['Authorization', auth]);
  if (contentType !== null) headers.push(['Content-Type', contentType]);
  if (mutation.kind === 'oversize') chunked = undefined;
  let framingOk = true;
  if (mutation.kind === 'framing') {
    framingOk = false;
    const length = String(Buffer.byteLength(bodyText ?? (body ? serialize(body) : '')));
    if (mutation.how === 'te-and-cl') {
      headers.push(['Content-Length', length]);
      chunked = 7;
    } else {
      chunked = undefined;
      headers.push([
        'Content-Length',
        mutation.how === 'bad-length' ? `${length}x` : `${Number(length) + 1}`,
      ]);
    }
  }
  const path =
    t.path.replace(/\{([gsme])\}/g, (_m, slot: string) => names[slot] as string) +
    (query ? `?${query.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}` : '');
  const text = bodyText ?? (body ? serialize(body) : undefined);
  if (chunked !== undefined) label += ` (chunked by ${chunked})`;
  return {
    label,
    request: {
      method,
      path,
      headers,
      // (a framing mutation needs a body to frame)
      ...(text !== undefined || !framingOk ? { body: text ?? '{}' } : {}),
      ...(chunked !== undefined && (text !== undefined || !framingOk) ? { chunked } : {}),
    },
    // the HTTP parser refuses bad framing itself (a bare 400)
    expectJsonError: framingOk,
  };
}

type NeutralChange =
  { header: readonly [string, string] } | { chunked: number } | { contentType: string };

function describeValue(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/**
 * Requests that must all be refused: a valid request of some route with one invalidating change
 * (wrong or missing token, an invalid name in the path, a method the path does not serve, a
 * body that is not JSON or not an object, an unknown, missing or invalid field, a non-JSON
 * content type, a body over 1 MiB, bad query parameters), plus up to two harmless ones (extra
 * headers, chunked transfer encoding, JSON content-type variants).
 */
export function invalidRequestArb(): fc.Arbitrary<FuzzRequest> {
  return fc
    .constantFrom(...TEMPLATES)
    .chain((t) =>
      fc
        .tuple(mutationsOf(t), fc.array(neutral, { maxLength: 2 }))
        .map(([mutation, extras]) => build(t, mutation, extras)),
    );
}

const VOCABULARY = [
  'v1',
  'groups',
  'streams',
  'g',
  'e',
  'orders',
  'heartbeat',
  'leave',
  'events',
  'members',
  'member-ids',
  'reshard',
  'dead-letters',
  'replay',
  'purge',
  'm1',
  'm2',
  'health',
  'ready',
  'live',
  'metrics',
  'docs',
  'ui',
  'api',
  'overview',
  '',
  '.',
  '..',
  '%2e%2e',
  '%00',
  '%ff',
  '%',
  '%%',
  '~',
  'openapi.json',
  '*',
  '@',
];

/**
 * Anything at all: random methods, paths built from the API's words and junk, random query
 * strings, tokens, content types, headers and bodies. Most are refused; some are valid reads.
 */
export function anyRequestArb(): fc.Arbitrary<FuzzRequest> {
  const segment = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...VOCABULARY) },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~%!$&'()*+,;=:@-]{1,20}$/) },
  );
  const name = fc.oneof(
    fc.constantFrom(FUZZ_FIXTURE.group, FUZZ_FIXTURE.emptyGroup, FUZZ_FIXTURE.stream, 'unknown'),
    fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/),
    invalidNameSegment,
  );
  const id = fc.oneof(
    fc.constantFrom(FUZZ_FIXTURE.member, FUZZ_FIXTURE.otherMember, 'ghost'),
    printable(1, 20).map((x) => encodeURIComponent(x)),
  );
  const route: fc.Arbitrary<readonly [string, string]> = fc.oneof(
    name.map((g) => ['POST', `/v1/groups/${g}/heartbeat`] as const),
    name.map((g) => ['POST', `/v1/groups/${g}/leave`] as const),
    name.map((g) => ['POST', `/v1/groups/${g}/member-ids`] as const),
    name.map((g) => ['GET', `/v1/groups/${g}/events`] as const),
    name.map((g) => ['GET', `/v1/groups/${g}`] as const),
    name.map((g) => ['DELETE', `/v1/groups/${g}`] as const),
    fc.tuple(name, id).map(([g, m]) => ['DELETE', `/v1/groups/${g}/members/${m}`] as const),
    name.map((st) => ['GET', `/v1/streams/${st}`] as const),
    name.map((st) => ['PUT', `/v1/streams/${st}`] as const),
    name.map((st) => ['POST', `/v1/streams/${st}/reshard`] as const),
    name.map((st) => ['GET', `/v1/streams/${st}/dead-letters`] as const),
    name.map((st) => ['GET', `/v1/streams/${st}/dead-letters/1-0`] as const),
    name.map((st) => ['POST', `/v1/streams/${st}/dead-letters/replay`] as const),
    name.map((st) => ['POST', `/v1/streams/${st}/dead-letters/purge`] as const),
    fc
      .constantFrom(
        '/v1/groups',
        '/v1/streams',
        '/health/live',
        '/health/ready',
        '/metrics',
        '/docs',
        '/docs/openapi.json',
        '/ui',
        '/ui/api/overview',
        `/ui/api/groups/${FUZZ_FIXTURE.group}`,
      )
      .map((p) => ['GET', p] as const),
  );
  const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD');
  const target: fc.Arbitrary<readonly [string, string]> = fc.oneof(
    { weight: 6, arbitrary: route },
    {
      weight: 1,
      arbitrary: fc.tuple(
        method,
        route.map(([, p]) => p),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        method,
        fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => `/${parts.join('/')}`),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(
        method,
        fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/v1/${parts.join('/')}`),
      ),
    },
    { weight: 1, arbitrary: fc.tuple(method, fc.stringMatching(/^\/[!-~]{0,60}$/)) },
  );
  const query = fc.option(
    fc
      .array(fc.tuple(fc.stringMatching(/^[a-z]{0,8}$/), fc.stringMatching(/^[!-~]{0,12}$/)), {
        maxLength: 3,
      })
      .map((pairs) => pairs.map(([k, v]) => `${k}=${v.replace(/[#\s]/g, '')}`).join('&')),
  );
  const body = fc.option(
    fc.oneof(
      fc.json({ maxDepth: 3 }),
      fc.string({ maxLength: 80 }),
      fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify({ memberId: 'm1', memberEpoch: v })),
      fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify({ shards: v })),
      fc
        .record(
          {
            memberId: fc.oneof(fc.constantFrom('m1', 'm2', 'fz'), fc.jsonValue({ maxDepth: 1 })),
            memberEpoch: fc.oneof(fc.integer({ min: -3, max: 5 }), fc.jsonValue({ maxDepth: 1 })),
            rebalanceTimeoutMs: fc.oneof(
              fc.integer({ min: -1, max: 100_000 }),
              fc.jsonValue({ maxDepth: 1 }),
            ),
            subscribedStreams: fc.oneof(
              fc.constant(['orders']),
              fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
              fc.jsonValue({ maxDepth: 1 }),
            ),
            ownedShards: fc.oneof(
              fc.constant([]),
              fc.array(
                fc.record({
                  stream: fc.constantFrom('orders', 'x', ''),
                  shards: fc.array(fc.integer({ min: -2, max: 10 }), { maxLength: 4 }),
                }),
                { maxLength: 2 },
              ),
              fc.jsonValue({ maxDepth: 2 }),
            ),
            instanceId: fc.oneof(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 })),
            temporary: fc.jsonValue({ maxDepth: 1 }),
          },
          { requiredKeys: [] },
        )
        .map((b) => JSON.stringify(b)),
    ),
  );
  const auth = fc.constantFrom<string | null>(
    null,
    `Bearer ${TEST_TOKENS.member}`,
    `Bearer ${TEST_TOKENS.member}`,
    `Bearer ${TEST_TOKENS.admin}`,
    `Bearer ${TEST_TOKENS.admin}`,
    'Bearer nope',
    'Basic Zm9vOmJhcg==',
    '',
  );
  const contentType = fc.constantFrom<string | null>(
    null,
    'application/json',
    'application/json',
    'application/json',
    'text/plain',
    'application/x-www-form-urlencoded',
    '*/*',
    'application/json; charset=latin1',
  );
  const extraHeaders = fc.array(
    fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/), printable(0, 30)),
    { maxLength: 3 },
  );
  return fc
    .record({
      target,
      query,
      body,
      auth,
      contentType,
      extraHeaders,
      chunked: fc.option(fc.integer({ min: 1, max: 32 })),
    })
    .map((r) => {
      const headers: Array<readonly [string, string]> = r.extraHeaders.filter(
        ([name]) =>
          !/^(host|connection|content-length|transfer-encoding|authorization|content-type)$/i.test(
            name,
          ),
      );
      if (r.auth !== null) headers.push(['Authorization', r.auth]);
      if (r.contentType !== null) headers.push(['Content-Type', r.contentType]);
      const [method, path] = r.target;
      const full = r.query === null ? path : `${path}?${r.query}`;
      return {
        label: `${method} ${full.slice(0, 120)}`,
        request: {
          method,
          path: full,
          headers,
          ...(r.body !== null ? { body: r.body } : {}),
          ...(r.body !== null && r.chunked !== null ? { chunked: r.chunked } : {}),
        },
        expectJsonError: false,
      };
    });
}
