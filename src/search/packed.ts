// Strings by index packed into one byte buffer (UTF-8) with an offsets array: the search's
// per-document class names and their identifier parts, held for every document of the
// library (10^6 at scale). As JS strings and arrays they were ~10^6 objects of the old
// generation, which every major collection marks and every scavenge's write barrier
// tracks: a fresh catalog's first pages were mostly garbage collections of them (at 10^6
// blocks ~420 ms of the first page's ~475 ms of CPU). Packed, they are two allocations
// outside the JS heap; a string is decoded when a query needs it (a query reads at most a
// few thousand).

/** Strings 0…n−1 packed (PackedStringsBuilder makes them). */
export class PackedStrings {
  constructor(
    private readonly bytes: Buffer,
    /** string i is bytes[ends[i − 1] (0 for i = 0) … ends[i]) */
    private readonly ends: Int32Array,
  ) {}

  get length(): number {
    return this.ends.length;
  }

  /** Byte length of string i (0: empty, or never set). */
  byteLength(i: number): number {
    return this.ends[i] - (i ? this.ends[i - 1] : 0);
  }

  /** String i ('' for an index out of range or never set). */
  get(i: number): string {
    if (i < 0 || i >= this.ends.length) return '';
    const s = i ? this.ends[i - 1] : 0;
    const e = this.ends[i];
    return e > s ? this.bytes.toString('utf8', s, e) : '';
  }
}

/** Builds PackedStrings of `n` strings, set in increasing index order (an index skipped is
 *  the empty string). */
export class PackedStringsBuilder {
  private bytes: Buffer;
  private used = 0;
  private readonly ends: Int32Array;
  private next = 0;

  constructor(n: number, bytesHint = 16 * n) {
    this.ends = new Int32Array(n);
    this.bytes = Buffer.allocUnsafe(Math.max(64, bytesHint));
  }

  set(i: number, s: string): void {
    if (i < this.next) throw new Error(`PackedStringsBuilder: index ${i} after ${this.next - 1}`);
    if (i >= this.ends.length) throw new Error(`PackedStringsBuilder: index ${i} past ${this.ends.length - 1}`);
    // the strings skipped are empty
    this.ends.fill(this.used, this.next, i);
    const need = this.used + Buffer.byteLength(s, 'utf8');
    if (need > this.bytes.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.bytes.length * 2));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    this.used += this.bytes.write(s, this.used, 'utf8');
    this.ends[i] = this.used;
    this.next = i + 1;
  }

  /** The strings (the buffer trimmed to what they use). */
  build(): PackedStrings {
    this.ends.fill(this.used, this.next);
    this.next = this.ends.length;
    const bytes = Buffer.alloc(this.used);
    this.bytes.copy(bytes, 0, 0, this.used);
    return new PackedStrings(bytes, this.ends);
  }
}
