/** An argument of a command: strings go as UTF-8, numbers in decimal, Buffers as they are. */
export type CommandArgument = string | number | Buffer;

/**
 * `args` as one RESP2 command (an array of bulk strings), ready for one socket write: a string
 * when every argument is text (the readers' usual case: one string concatenation, encoded by the
 * socket), a Buffer when one is binary.
 */
export function encodeCommand(args: readonly CommandArgument[]): string | Buffer {
  let text = `*${args.length}\r\n`;
  let parts: Buffer[] | undefined;
  for (const arg of args) {
    if (typeof arg === 'string') {
      text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
    } else if (typeof arg === 'number') {
      const digits = String(arg);
      text += `$${digits.length}\r\n${digits}\r\n`;
    } else {
      parts ??= [];
      parts.push(Buffer.from(`${text}$${arg.length}\r\n`), arg);
      text = '\r\n';
    }
  }
  if (parts === undefined) return text;
  parts.push(Buffer.from(text));
  return Buffer.concat(parts);
}
