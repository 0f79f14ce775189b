// philox.h — Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy
// as 1, 2, 3", SC'11), usable from C and CUDA, and the stream keying of docs/spec.md §6.
//
// A stream is (key, counter): key = (seed, purpose << 24 | rank), counter = a 64-bit block
// index. Every consumer says how it maps its draws onto counters; the stream state that a
// checkpoint stores is exactly this struct.
#ifndef DDPTOK_PHILOX_H
#define DDPTOK_PHILOX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __CUDACC__
#define PHILOX_FN static inline __host__ __device__
#else
#define PHILOX_FN static inline
#endif

typedef struct { uint32_t v[4]; } Philox4;

PHILOX_FN uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi) {
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

// One Philox4x32 block: 10 rounds over counter c under key k.
PHILOX_FN Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
    const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
    const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = philox_mulhilo(M0, c.v[0], &hi0);
        uint32_t lo1 = philox_mulhilo(M1, c.v[2], &hi1);
        Philox4 n;
        n.v[0] = hi1 ^ c.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ c.v[3] ^ k1;
        n.v[3] = lo0;
        c = n;
        k0 += W0;
        k1 += W1;
    }
    return c;
}

// Stream purposes (the top byte of key word 1).
// RNG_GLOBAL_SAMPLER and RNG_KEYED_DROPOUT are rank-free (rank word 0): the global sampler's
// one stream, and dropout keyed by what it is about (see model.h, Dropout).
enum { RNG_CORPUS = 1, RNG_INIT = 2, RNG_SAMPLER = 3, RNG_DROPOUT = 4, RNG_GLOBAL_SAMPLER = 5, RNG_KEYED_DROPOUT = 6, RNG_GENERATE = 7 };  // 7: generate's sampling (seed --seed)

typedef struct {
    uint32_t key[2];   // (seed, purpose << 24 | rank)
    uint64_t counter;  // next block index
} RngStream;

PHILOX_FN RngStream rng_stream(uint32_t seed, uint32_t purpose, uint32_t rank) {
    RngStream s;
    s.key[0] = seed;
    s.key[1] = (purpose << 24) | (rank & 0xFFFFFFu);
    s.counter = 0;
    return s;
}

// Block at 64-bit index `block` with two extra counter words (used by dropout for the
// position and the hidden-unit chunk; zero for sequential draws).
PHILOX_FN Philox4 rng_block(const RngStream *s, uint64_t block, uint32_t w2, uint32_t w3) {
    Philox4 c = {{(uint32_t)block, (uint32_t)(block >> 32), w2, w3}};
    return philox4x32_10(c, s->key[0], s->key[1]);
}

// Sequential draw: one block per call, word 0 of it; advances the counter.
PHILOX_FN uint32_t rng_next_u32(RngStream *s) {
    return rng_block(s, s->counter++, 0, 0).v[0];
}

// Uniform integer in [0, n) without bias (Lemire's multiply-and-reject), n > 0.
PHILOX_FN uint32_t rng_below(RngStream *s, uint32_t n) {
    uint64_t m = (uint64_t)rng_next_u32(s) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)rng_next_u32(s) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

// Uniform double in [0, 1) with 53 random bits from two draws.
PHILOX_FN double rng_uniform(RngStream *s) {
    uint64_t a = rng_next_u32(s) >> 5, b = rng_next_u32(s) >> 6;
    return (double)(a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

// Dropout keep-threshold: unit kept iff its 32-bit draw >= threshold, P(drop) = p.
PHILOX_FN uint32_t dropout_threshold(double p) {
    double t = p * 4294967296.0;
    return t >= 4294967295.0 ? 0xFFFFFFFFu : (uint32_t)t;
}

// The dropout draws of hidden units 4q..4q+3 at padded position `pos` of the microbatch
// whose block index is `block`: four units share one Philox block.
PHILOX_FN Philox4 dropout_block(const RngStream *s, uint64_t block, uint32_t pos, uint32_t q) {
    return rng_block(s, block, pos, q);
}

// The dropout blocks of PHILOX_LANES consecutive chunks q0, q0+1, ... at once, as a
// structure of arrays: out[w][j] = dropout_block(s, block, pos, q0 + j).v[w]. The same
// rounds as philox4x32_10, lane by lane (the same bits), written as loops over the lanes
// so the compiler turns them into SIMD multiplies (the CPU backend's mask, 8 blocks per call).
enum { PHILOX_LANES = 8 };
PHILOX_FN void dropout_lanes(const RngStream *s, uint64_t block, uint32_t pos, uint32_t q0,
                             uint32_t out[4][PHILOX_LANES]) {
    const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
    const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    uint32_t c0[PHILOX_LANES], c1[PHILOX_LANES], c2[PHILOX_LANES], c3[PHILOX_LANES];
    for (int j = 0; j < PHILOX_LANES; j++)
        c0[j] = (uint32_t)block, c1[j] = (uint32_t)(block >> 32), c2[j] = pos, c3[j] = q0 + (uint32_t)j;
    uint32_t k0 = s->key[0], k1 = s->key[1];
    for (int round = 0; round < 10; round++) {
        for (int j = 0; j < PHILOX_LANES; j++) {
            uint64_t p0 = (uint64_t)M0 * c0[j], p1 = (uint64_t)M1 * c2[j];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[j] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[j] ^ k1;
            c0[j] = n0, c1[j] = (uint32_t)p1, c2[j] = n2, c3[j] = (uint32_t)p0;
        }
        k0 += W0;
        k1 += W1;
    }
    for (int j = 0; j < PHILOX_LANES; j++) out[0][j] = c0[j], out[1][j] = c1[j], out[2][j] = c2[j], out[3][j] = c3[j];
}

// The counter (block, word) of the dropout draws at padded position `pos` of a microbatch of
// padded length L. Per-microbatch keying (`ids` NULL): (`block`, pos) — the draw moves with
// the slot. Keyed by what it is about (`ids` = the sequence id of each slot, under the global
// sampler's RNG_KEYED_DROPOUT stream): (step | id << 32, the position inside the sequence) —
// the same mask whichever rank or microbatch computes the sequence.
PHILOX_FN void dropout_counter(uint64_t block, const int32_t *ids, int L, uint32_t step, uint32_t pos, uint64_t *out_block,
                               uint32_t *out_word) {
    if (!ids) {
        *out_block = block, *out_word = pos;
        return;
    }
    *out_block = (uint64_t)step | ((uint64_t)(uint32_t)ids[pos / (uint32_t)L] << 32);
    *out_word = pos % (uint32_t)L;
}

// The dropout block of units 4q..4q+3 at padded position `pos` (see dropout_counter).
PHILOX_FN Philox4 dropout_block_at(const RngStream *s, uint64_t block, const int32_t *ids, int L, uint32_t step, uint32_t pos,
                                   uint32_t q) {
    uint64_t b;
    uint32_t w;
    dropout_counter(block, ids, L, step, pos, &b, &w);
    return dropout_block(s, b, w, q);
}

// Dropout draw for hidden unit i (word i mod 4 of its block).
PHILOX_FN uint32_t dropout_bits(const RngStream *s, uint64_t block, uint32_t pos, uint32_t i) {
    return dropout_block(s, block, pos, i >> 2).v[i & 3];
}

#ifdef __cplusplus
}
#endif
#endif
