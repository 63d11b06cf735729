/**
 * The client-side vector mask: a secret rotation of embeddings, so a server sees only masked ones.
 *
 * `new VectorMask(key)` given to `new Memory({ url, vectorMask })` masks every embedding the
 * client sends (remember, rememberMany, rememberFile, recall, explain, putDocument,
 * searchDocuments) and unmasks those that come back (`Fact.embedding`, `Document.embedding`).
 * The map is orthogonal, so cosine scores and rankings on the server are those of the raw vectors
 * (up to float32 rounding); it is the map of the Python client (`hmsengine.vectormask`), bit for
 * bit, so both clients can share a store.
 *
 * What it does not protect (docs/SECURITY.md): the geometry (every similarity and norm is kept,
 * by design), and the coordinates themselves against anyone who holds about `dim` pairs of raw
 * and masked vectors (a server running the same public model on the texts it also receives can
 * solve for the rotation). It is not encryption; texts, ids and metadata travel in clear.
 *
 * The construction (version 1): a seed (the key's bytes, at least 16, or scrypt of a passphrase:
 * salt "hmsengine vector mask v1", N 2^14, r 8, p 1, 32 bytes); the stream SHAKE-256("hmsengine
 * vector mask v1" || 0x00 || dim as uint32 big endian || seed) read as big-endian uint32 words;
 * 2 ceil(log2 dim) + 2 rounds, each a Fisher-Yates permutation (uniform(n) rejects
 * u >= 2^32 - 2^32 mod n) then floor(dim / 2) plane rotations of coordinate pairs (x = u / 2^31 - 1,
 * y likewise, kept when 0 < x^2 + y^2 <= 1; cos = x / r, sin = y / r), all in float64 in the
 * order written in `forward`.
 */

import { createHash, scryptSync } from "node:crypto";
import { invalid } from "./errors.js";

const DOMAIN = "hmsengine vector mask v1";
const MIN_KEY_BYTES = 16;
const MAX_DIM = 65536;
const TWO_32 = 4294967296;

/** The seed of a key: its bytes as given, or scrypt of a passphrase. */
function deriveSeed(key: string | Uint8Array): Buffer {
  if (typeof key === "string") {
    if (key.length === 0) throw invalid("vectorMask key: an empty passphrase is not a key", "pass a passphrase or 32 random bytes");
    return scryptSync(Buffer.from(key, "utf8"), Buffer.from(DOMAIN), 32, { N: 1 << 14, r: 8, p: 1 });
  }
  if (key instanceof Uint8Array) {
    if (key.length < MIN_KEY_BYTES) {
      throw invalid(`vectorMask key: raw keys are at least ${MIN_KEY_BYTES} bytes, got ${key.length}`, "use 32 random bytes (crypto.randomBytes(32))");
    }
    return Buffer.from(key);
  }
  throw invalid("vectorMask key: expected a passphrase string or a Uint8Array", "new VectorMask(passphrase) or new VectorMask(randomBytes(32))");
}

/** The big-endian uint32 words of SHAKE-256(message), one by one. */
class Words {
  readonly #message: Buffer;
  #words: Buffer = Buffer.alloc(0);
  #count = 0;
  #next = 0;

  constructor(message: Buffer, first: number) {
    this.#message = message;
    this.#grow(first);
  }

  #grow(count: number): void {
    // SHAKE's output for n bytes is a prefix of its output for more: asking for twice as much
    // continues the same stream.
    this.#words = createHash("shake256", { outputLength: 4 * count }).update(this.#message).digest();
    this.#count = count;
  }

  next(): number {
    if (this.#next === this.#count) this.#grow(2 * this.#count);
    const word = this.#words.readUInt32BE(4 * this.#next);
    this.#next += 1;
    return word;
  }

  uniform(n: number): number {
    const limit = TWO_32 - (TWO_32 % n);
    for (;;) {
      const word = this.next();
      if (word < limit) return word % n;
    }
  }
}

interface Round {
  perm: Int32Array;
  inverse: Int32Array;
  cos: Float64Array;
  sin: Float64Array;
}

function roundsFor(dim: number): number {
  return 2 * Math.ceil(Math.log2(dim)) + 2;
}

function makeRounds(seed: Buffer, dim: number): Round[] {
  const count = roundsFor(dim);
  const pairs = Math.floor(dim / 2);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(dim);
  const words = new Words(Buffer.concat([Buffer.from(DOMAIN), Buffer.from([0]), header, seed]), count * (dim + 3 * pairs));
  const rounds: Round[] = [];
  for (let r = 0; r < count; r++) {
    const perm = new Int32Array(dim);
    for (let i = 0; i < dim; i++) perm[i] = i;
    for (let i = dim - 1; i > 0; i--) {
      const j = words.uniform(i + 1);
      const t = perm[i] as number;
      perm[i] = perm[j] as number;
      perm[j] = t;
    }
    const cos = new Float64Array(pairs);
    const sin = new Float64Array(pairs);
    for (let k = 0; k < pairs; k++) {
      let x: number;
      let y: number;
      let r2: number;
      do {
        x = words.next() / 2147483648 - 1;
        y = words.next() / 2147483648 - 1;
        r2 = x * x + y * y;
      } while (!(r2 > 0 && r2 <= 1));
      const norm = Math.sqrt(r2);
      cos[k] = x / norm;
      sin[k] = y / norm;
    }
    const inverse = new Int32Array(dim);
    for (let i = 0; i < dim; i++) inverse[perm[i] as number] = i;
    rounds.push({ perm, inverse, cos, sin });
  }
  return rounds;
}

/** A secret orthogonal map of embeddings derived from a key (see the module's comment). */
export class VectorMask {
  readonly #seed: Buffer;
  readonly #rounds = new Map<number, Round[]>();

  /** `key`: a passphrase, or at least 16 random bytes (the same key as the Python client's). */
  constructor(key: string | Uint8Array) {
    this.#seed = deriveSeed(key);
  }

  toString(): string {
    return "VectorMask(<secret>)";
  }

  #roundsOf(dim: number): Round[] {
    let rounds = this.#rounds.get(dim);
    if (rounds === undefined) {
      rounds = makeRounds(this.#seed, dim);
      this.#rounds.set(dim, rounds);
    }
    return rounds;
  }

  static #vector(vector: unknown, field: string): Float64Array {
    if (typeof vector !== "object" || vector === null || typeof (vector as ArrayLike<number>).length !== "number") {
      throw invalid(`${field}: expected a vector of numbers`, "pass an array of numbers");
    }
    const values = Float64Array.from(vector as ArrayLike<number>);
    if (values.length < 2 || values.length > MAX_DIM) {
      throw invalid(`${field}: a masked vector has 2 to ${MAX_DIM} numbers, got ${values.length}`, "pass the embedding itself");
    }
    for (const x of values) {
      if (!Number.isFinite(x)) throw invalid(`${field}: expected finite numbers`, "send finite numbers only");
    }
    return values;
  }

  /** The masked image of `vector`. */
  mask(vector: ArrayLike<number>, field = "embedding"): number[] {
    let v = VectorMask.#vector(vector, field);
    const dim = v.length;
    const end = 2 * Math.floor(dim / 2);
    for (const { perm, cos, sin } of this.#roundsOf(dim)) {
      const w = new Float64Array(dim);
      for (let i = 0; i < dim; i++) w[i] = v[perm[i] as number] as number;
      for (let i = 0, k = 0; i < end; i += 2, k++) {
        const a = w[i] as number;
        const b = w[i + 1] as number;
        const c = cos[k] as number;
        const s = sin[k] as number;
        w[i] = c * a - s * b;
        w[i + 1] = s * a + c * b;
      }
      v = w;
    }
    return Array.from(v);
  }

  /** The vector whose masked image is `vector` (`mask`'s inverse). */
  unmask(vector: ArrayLike<number>, field = "embedding"): number[] {
    let v = VectorMask.#vector(vector, field);
    const dim = v.length;
    const end = 2 * Math.floor(dim / 2);
    const rounds = this.#roundsOf(dim);
    for (let r = rounds.length - 1; r >= 0; r--) {
      const { inverse, cos, sin } = rounds[r] as Round;
      for (let i = 0, k = 0; i < end; i += 2, k++) {
        const a = v[i] as number;
        const b = v[i + 1] as number;
        const c = cos[k] as number;
        const s = sin[k] as number;
        v[i] = c * a + s * b;
        v[i + 1] = c * b - s * a;
      }
      const w = new Float64Array(dim);
      for (let i = 0; i < dim; i++) w[i] = v[inverse[i] as number] as number;
      v = w;
    }
    return Array.from(v);
  }
}
