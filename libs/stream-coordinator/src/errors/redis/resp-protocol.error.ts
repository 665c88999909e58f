import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A reader's direct connection received bytes that are not a RESP2 reply, or a reply no command
 * waited for. The connection is closed (the reader opens a new one); if it repeats, something
 * between the reader and Redis changes the stream (a proxy speaking another protocol, a server
 * that is not Redis): set `readerClient: 'bundled'` and report it.
 */
export class RespProtocolError extends StreamCoordinatorError {
  override readonly name = 'RespProtocolError';

  constructor(detail: string) {
    super(`reader connection: not a RESP2 reply (${detail}); the connection is closed`);
  }
}
