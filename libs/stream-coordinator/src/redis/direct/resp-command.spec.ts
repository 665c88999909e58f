import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RespReplyParser } from './resp-reply-parser.js';
import { type CommandArgument, encodeCommand } from './resp-command.js';

const argument: fc.Arbitrary<CommandArgument> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.integer(),
  fc.uint8Array({ maxLength: 30 }).map((a) => Buffer.from(a)),
);

function asBuffer(arg: CommandArgument): Buffer {
  return Buffer.isBuffer(arg) ? arg : Buffer.from(String(arg), 'utf8');
}

describe('encodeCommand', () => {
  it('encodes any arguments as one RESP2 array of bulk strings, bytes unchanged', () => {
    fc.assert(
      fc.property(fc.array(argument, { minLength: 1, maxLength: 8 }), (args) => {
        const encoded = encodeCommand(args);
        // a command is an array of bulk strings: the reply parser reads it back
        const got: unknown[] = [];
        new RespReplyParser(
          (reply) => got.push(reply),
          () => 'buffers',
        ).feed(Buffer.isBuffer(encoded) ? encoded : Buffer.from(encoded, 'utf8'));
        expect(got).toEqual([args.map(asBuffer)]);
      }),
      { numRuns: 300 },
    );
  });

  it('stays a string when every argument is text', () => {
    expect(encodeCommand(['XACK', 'k', 'g', 7])).toBe(
      '*4\r\n$4\r\nXACK\r\n$1\r\nk\r\n$1\r\ng\r\n$1\r\n7\r\n',
    );
  });
});
