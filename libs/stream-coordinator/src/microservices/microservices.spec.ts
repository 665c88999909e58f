import { describe, expect, it } from 'vitest';
import { ClientProxyNotConnectedError } from '../errors/microservices/client-proxy-not-connected.error.js';
import { TransportEventsUnsupportedError } from '../errors/microservices/transport-events-unsupported.error.js';
import { TransportNotListeningError } from '../errors/microservices/transport-not-listening.error.js';
import { StreamCoordinatorClientProxy } from './stream-coordinator.client-proxy.js';
import { StreamCoordinatorTransport } from './stream-coordinator.transport.js';

const options = {
  coordinatorUrl: 'http://127.0.0.1:7400',
  token: 't',
  redis: 'redis://127.0.0.1:6379',
  group: 'g',
  memberId: 'm',
};

describe('microservices before they start', () => {
  it('the client proxy refuses unwrap() until connected', () => {
    const client = new StreamCoordinatorClientProxy(options);
    expect(() => client.unwrap()).toThrow(ClientProxyNotConnectedError);
    expect(() => client.unwrap()).toThrow(/connect\(\) before unwrap\(\)/);
  });

  it('the transport refuses unwrap() until listening, and on() always', () => {
    const transport = new StreamCoordinatorTransport(options);
    expect(() => transport.unwrap()).toThrow(TransportNotListeningError);
    expect(() => transport.on()).toThrow(TransportEventsUnsupportedError);
    expect(() => transport.on()).toThrow(/use MemberRuntimeEvents/);
  });
});
