const encoder = new TextEncoder();

/**
 * MurmurHash3, x86 32-bit variant (Austin Appleby's reference `MurmurHash3_x86_32`), over the
 * UTF-8 bytes of `key`. Returns an unsigned 32-bit integer. Same output as Python's
 * `mmh3.hash(key, seed, signed=False)` and Guava's `murmur3_32_fixed`.
 *
 * @publicApi
 */
export function murmur3x86_32(key: string | Uint8Array, seed = 0): number {
  const data = typeof key === 'string' ? encoder.encode(key) : key;
  const length = data.length;
  const blocks = length & ~3;
  let h = seed >>> 0;
  const c1 = 0xcc9e2d51;
  const c2 = 0x1b873593;
  for (let i = 0; i < blocks; i += 4) {
    let k =
      (data[i] as number) |
      ((data[i + 1] as number) << 8) |
      ((data[i + 2] as number) << 16) |
      ((data[i + 3] as number) << 24);
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  const tail = length & 3;
  if (tail > 0) {
    let k = 0;
    if (tail === 3) k ^= (data[blocks + 2] as number) << 16;
    if (tail >= 2) k ^= (data[blocks + 1] as number) << 8;
    k ^= data[blocks] as number;
    k = Math.imul(k, c1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, c2);
    h ^= k;
  }
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
