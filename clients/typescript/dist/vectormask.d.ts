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
/** A secret orthogonal map of embeddings derived from a key (see the module's comment). */
export declare class VectorMask {
    #private;
    /** `key`: a passphrase, or at least 16 random bytes (the same key as the Python client's). */
    constructor(key: string | Uint8Array);
    toString(): string;
    /** The masked image of `vector`. */
    mask(vector: ArrayLike<number>, field?: string): number[];
    /** The vector whose masked image is `vector` (`mask`'s inverse). */
    unmask(vector: ArrayLike<number>, field?: string): number[];
}
