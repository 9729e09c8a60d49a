/** Bounded capture of a remote command's output streams (src/mgmt/ssh/ssh-executor.ts). */
import { StringDecoder } from 'node:string_decoder';
import type { Redactor } from './redact.ts';
import { SSH_MAX_LINE_CHARS } from './ssh-common.ts';

/** Bounded capture of one output stream (the tail is kept), with line streaming. */
export class StreamCapture {
  private chunks: Buffer[] = [];
  private size = 0;
  truncated = false;
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private continued = false;

  constructor(
    private readonly max: number,
    private readonly redactor: Redactor,
    private readonly onLine: ((line: string) => void) | undefined,
    /** Keep everything, unredacted (downloads); no streaming. */
    private readonly raw = false,
  ) {}

  push(buf: Buffer): void {
    this.chunks.push(buf);
    this.size += buf.length;
    if (this.raw) return;
    while (this.size > this.max) {
      this.truncated = true;
      const first = this.chunks[0] as Buffer;
      const excess = this.size - this.max;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
    if (!this.onLine) return;
    this.pending += this.decoder.write(buf);
    let i: number;
    while ((i = this.pending.indexOf('\n')) >= 0) {
      this.emit(this.pending.slice(0, i).replace(/\r$/, ''), this.continued, false);
      this.pending = this.pending.slice(i + 1);
      this.continued = false;
    }
    while (this.pending.length > SSH_MAX_LINE_CHARS) {
      this.emit(this.pending.slice(0, SSH_MAX_LINE_CHARS), this.continued, true);
      this.pending = this.pending.slice(SSH_MAX_LINE_CHARS);
      this.continued = true;
    }
  }

  private emit(line: string, cutStart: boolean, cutEnd: boolean): void {
    try {
      this.onLine?.(this.redactor.redactCut(line, cutStart, cutEnd));
    } catch {
      /* a listener's failure must not break the capture */
    }
  }

  /** Flushes the last partial line to the listener. */
  end(): void {
    if (!this.onLine || this.raw) return;
    this.pending += this.decoder.end();
    if (this.pending) this.emit(this.pending.replace(/\r$/, ''), this.continued, false);
    this.pending = '';
  }

  buffer(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  /** The captured text, redacted. */
  text(): string {
    let buf = this.buffer();
    if (this.truncated) {
      let i = 0;
      while (i < buf.length && i < 4 && ((buf[i] as number) & 0xc0) === 0x80) i++; // a cut UTF-8 sequence
      buf = buf.subarray(i);
      return this.redactor.redactCut(buf.toString('utf8'), true, false);
    }
    return this.redactor.redact(buf.toString('utf8'));
  }
}
