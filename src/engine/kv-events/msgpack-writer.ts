// The few MessagePack forms KV events use, each in its smallest encoding as msgspec writes them
// (floats always as float64), appended to one growing buffer: an event batch is encoded on the
// engine thread once per step, so this allocates no object per value.

export class MsgpackWriter {
  private buf = Buffer.allocUnsafe(1024);
  private at = 0;

  /** The bytes written (a copy), and the writer empty again for the next message. */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.at));
    this.at = 0;
    return out;
  }

  nil(): this {
    this.room(1);
    this.buf[this.at++] = 0xc0;
    return this;
  }

  /** A safe integer. */
  int(v: number): this {
    this.room(9);
    if (v >= 0) {
      if (v < 0x80) this.buf[this.at++] = v;
      else if (v < 0x100) this.head8(0xcc, v);
      else if (v < 0x10000) this.head16(0xcd, v);
      else if (v < 0x100000000) this.head32(0xce, v);
      else this.u64(BigInt(v));
    } else if (v >= -32) {
      this.buf[this.at++] = 0x100 + v;
    } else if (v >= -0x80) {
      this.buf[this.at++] = 0xd0;
      this.at = this.buf.writeInt8(v, this.at);
    } else if (v >= -0x8000) {
      this.buf[this.at++] = 0xd1;
      this.at = this.buf.writeInt16BE(v, this.at);
    } else if (v >= -0x80000000) {
      this.buf[this.at++] = 0xd2;
      this.at = this.buf.writeInt32BE(v, this.at);
    } else {
      this.buf[this.at++] = 0xd3;
      this.at = this.buf.writeBigInt64BE(BigInt(v), this.at);
    }
    return this;
  }

  /** An unsigned 64-bit integer, in the smallest form that holds it. */
  uint(v: bigint): this {
    if (v < 0x100000000n) return this.int(Number(v));
    this.room(9);
    this.u64(v);
    return this;
  }

  float64(v: number): this {
    this.room(9);
    this.buf[this.at++] = 0xcb;
    this.at = this.buf.writeDoubleBE(v, this.at);
    return this;
  }

  str(s: string): this {
    const n = Buffer.byteLength(s, 'utf8');
    this.room(5 + n);
    if (n < 32) this.buf[this.at++] = 0xa0 | n;
    else if (n < 0x100) this.head8(0xd9, n);
    else if (n < 0x10000) this.head16(0xda, n);
    else this.head32(0xdb, n);
    this.at += this.buf.write(s, this.at, 'utf8');
    return this;
  }

  strOrNil(s: string | null): this {
    return s === null ? this.nil() : this.str(s);
  }

  intOrNil(v: number | null): this {
    return v === null ? this.nil() : this.int(v);
  }

  array(n: number): this {
    this.room(5);
    if (n < 16) this.buf[this.at++] = 0x90 | n;
    else if (n < 0x10000) this.head16(0xdc, n);
    else this.head32(0xdd, n);
    return this;
  }

  private u64(v: bigint): void {
    this.buf[this.at++] = 0xcf;
    this.at = this.buf.writeBigUInt64BE(v, this.at);
  }

  private head8(code: number, v: number): void {
    this.buf[this.at++] = code;
    this.buf[this.at++] = v;
  }

  private head16(code: number, v: number): void {
    this.buf[this.at++] = code;
    this.at = this.buf.writeUInt16BE(v, this.at);
  }

  private head32(code: number, v: number): void {
    this.buf[this.at++] = code;
    this.at = this.buf.writeUInt32BE(v, this.at);
  }

  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.at + n, 2 * this.buf.length));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }
}
