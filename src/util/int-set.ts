// A set of 32-bit unsigned integers as an open-addressing table (linear probing) whose
// clear is O(1): each slot carries the generation it was filled in, and clearing starts a
// new generation. For sets filled and emptied once per block in the library's hot loops
// (the names a block binds, structural.ts; a representative's shingles, probed by each
// member of its cluster, dedup.ts), where a JS Set hashes a heap number per operation.
export class IntSet {
  private keys = new Uint32Array(1024);
  private gens = new Uint32Array(1024);
  private gen = 1;
  private count = 0;

  /** Number of values held. */
  get size(): number {
    return this.count;
  }

  clear(): void {
    this.count = 0;
    if (++this.gen === 0xffffffff) {
      this.gens.fill(0);
      this.gen = 1;
    }
  }

  /** Whether `k` (a uint32) is held. */
  has(k: number): boolean {
    const keys = this.keys,
      gens = this.gens,
      mask = keys.length - 1,
      gen = this.gen;
    let i = IntSet.slot(k) & mask;
    for (;;) {
      if (gens[i] !== gen) return false;
      if (keys[i] === k) return true;
      i = (i + 1) & mask;
    }
  }

  /** Add `k` (a uint32). */
  add(k: number): void {
    if ((this.count + 1) * 2 > this.keys.length) this.grow();
    const keys = this.keys,
      gens = this.gens,
      mask = keys.length - 1,
      gen = this.gen;
    let i = IntSet.slot(k) & mask;
    for (;;) {
      if (gens[i] !== gen) {
        gens[i] = gen;
        keys[i] = k;
        this.count++;
        return;
      }
      if (keys[i] === k) return;
      i = (i + 1) & mask;
    }
  }

  private static slot(k: number): number {
    const x = Math.imul(k, 0x9e3779b1);
    return x ^ (x >>> 16);
  }

  private grow(): void {
    const old = this.keys,
      oldGens = this.gens,
      gen = this.gen;
    this.keys = new Uint32Array(old.length * 2);
    this.gens = new Uint32Array(old.length * 2);
    this.count = 0;
    for (let i = 0; i < old.length; i++) if (oldGens[i] === gen) this.add(old[i]);
  }
}
