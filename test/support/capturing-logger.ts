import type { LoggerService } from '@nestjs/common';

/** A Nest logger that keeps every line (any level), so a test can await or count one. */
export class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown): void {
    this.lines.push(String(message));
  }
  error(message: unknown): void {
    this.lines.push(String(message));
  }
  warn(message: unknown): void {
    this.lines.push(String(message));
  }
  debug(message: unknown): void {
    this.lines.push(String(message));
  }
  verbose(message: unknown): void {
    this.lines.push(String(message));
  }
  /** How many lines contain `text`. */
  count(text: string): number {
    return this.lines.filter((line) => line.includes(text)).length;
  }
}
