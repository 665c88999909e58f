import { connect } from 'node:net';

/** One request exactly as it goes on the wire (no client-side validation or normalisation). */
export interface RawRequest {
  readonly method: string;
  /** The request target, sent as is (not encoded). */
  readonly path: string;
  /** Header lines as `[name, value]` (Host and Connection are added). */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** Body bytes; sent with a correct Content-Length (or chunked, see `chunked`). */
  readonly body?: string | Buffer;
  /** Send the body with `Transfer-Encoding: chunked` in pieces of this size. */
  readonly chunked?: number;
}

/** What came back. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** The body parsed as JSON when the content type says JSON (else undefined). */
  readonly json: unknown;
}

/** The server closed the connection, or did not answer in time, without a full response. */
export class NoResponseError extends Error {
  override readonly name = 'NoResponseError';
}

/** The request's bytes. */
export function encodeRequest(req: RawRequest, host: string): Buffer {
  const body = req.body === undefined ? undefined : Buffer.from(req.body);
  const lines = [`${req.method} ${req.path} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  for (const [name, value] of req.headers) lines.push(`${name}: ${value}`);
  if (body !== undefined && req.chunked !== undefined) {
    lines.push('Transfer-Encoding: chunked');
    const parts: Buffer[] = [Buffer.from(`${lines.join('\r\n')}\r\n\r\n`)];
    const size = Math.max(1, req.chunked);
    for (let i = 0; i < body.length; i += size) {
      const piece = body.subarray(i, i + size);
      parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from('0\r\n\r\n'));
    return Buffer.concat(parts);
  }
  if (body !== undefined) lines.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body ?? Buffer.alloc(0)]);
}

/**
 * Sends one request on a fresh TCP connection to 127.0.0.1:`port` and reads the response until
 * the server closes the connection (`Connection: close`).
 *
 * @throws NoResponseError when no complete status line and headers came back within `timeoutMs`.
 */
export function sendRaw(port: number, req: RawRequest, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      try {
        resolve(parseResponse(Buffer.concat(chunks)));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    };
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(
        new NoResponseError(
          `no response within ${timeoutMs} ms to ${req.method} ${req.path.slice(0, 200)}`,
        ),
      );
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', () => finish());
    socket.write(encodeRequest(req, `127.0.0.1:${port}`));
  });
}

function parseResponse(raw: Buffer): RawResponse {
  const text = raw.toString('utf8');
  const split = text.indexOf('\r\n\r\n');
  if (split < 0)
    throw new NoResponseError(
      `incomplete response (${raw.length} bytes): ${JSON.stringify(text.slice(0, 200))}`,
    );
  const [statusLine = '', ...headerLines] = text.slice(0, split).split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!match)
    throw new NoResponseError(`not an HTTP response: ${JSON.stringify(statusLine.slice(0, 200))}`);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = text.slice(split + 4);
  if ((headers['transfer-encoding'] ?? '').toLowerCase().includes('chunked')) body = dechunk(body);
  let json: unknown;
  if ((headers['content-type'] ?? '').includes('json') && body.length > 0) {
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
  }
  return { status: Number(match[1]), headers, body, json };
}

function dechunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const line = rest.indexOf('\r\n');
    if (line < 0) return out;
    const size = Number.parseInt(rest.slice(0, line), 16);
    if (!Number.isFinite(size) || size === 0) return out;
    out += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}
