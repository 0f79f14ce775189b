// test_philox.c — Philox4x32-10 known-answer vectors (docs/spec.md §6, from Random123's kat_vectors)
// and properties of the draws ddptok builds on it.
#include <stdio.h>
#include <string.h>

#include "base/philox.h"

static int failed = 0, passed = 0;
#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(void) {
    struct { uint32_t c[4], k[2], want[4]; } kat[3] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}, {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (int i = 0; i < 3; i++) {
        Philox4 c;
        memcpy(c.v, kat[i].c, sizeof c.v);
        Philox4 out = philox4x32_10(c, kat[i].k[0], kat[i].k[1]);
        CHECK(memcmp(out.v, kat[i].want, sizeof out.v) == 0, "KAT %d: got %08x %08x %08x %08x", i, out.v[0], out.v[1], out.v[2], out.v[3]);
    }
    // Negative control: a 9-round variant must not match the first vector.
    {
        Philox4 c = {{0, 0, 0, 0}};
        uint32_t k0 = 0, k1 = 0;
        for (int r = 0; r < 9; r++) {
            uint64_t p0 = (uint64_t)0xD2511F53u * c.v[0], p1 = (uint64_t)0xCD9E8D57u * c.v[2];
            Philox4 n = {{(uint32_t)(p1 >> 32) ^ c.v[1] ^ k0, (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c.v[3] ^ k1, (uint32_t)p0}};
            c = n, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
        }
        CHECK(c.v[0] != kat[0].want[0], "a 9-round Philox matched the 10-round known answer");
    }
    // Streams of different purposes or ranks differ; the same key and counter repeat.
    RngStream a = rng_stream(1234, RNG_SAMPLER, 0), b = rng_stream(1234, RNG_SAMPLER, 1), d = rng_stream(1234, RNG_DROPOUT, 0);
    uint32_t xa = rng_next_u32(&a), xb = rng_next_u32(&b), xd = rng_next_u32(&d);
    CHECK(xa != xb && xa != xd, "streams for other ranks/purposes collide");
    RngStream a2 = rng_stream(1234, RNG_SAMPLER, 0);
    CHECK(rng_next_u32(&a2) == xa && a.counter == 1, "a stream does not repeat from its state");
    // rng_below stays in range and hits every value of a small range.
    int seen[7] = {0};
    for (int i = 0; i < 7000; i++) {
        uint32_t v = rng_below(&a, 7);
        if (v < 7) seen[v]++;
        else seen[0] = -1000000;
    }
    int all = 1;
    for (int i = 0; i < 7; i++) all &= seen[i] > 800 && seen[i] < 1200;
    CHECK(all, "rng_below(7) is out of range or far from uniform");
    // Dropout threshold: p = 0 keeps everything, the keep rate is close to 1 - p.
    CHECK(dropout_threshold(0.0) == 0, "p = 0 must keep every unit");
    uint32_t thr = dropout_threshold(0.25);
    int kept = 0;
    for (uint32_t i = 0; i < 40000; i++) kept += dropout_bits(&d, 3, i / 64, i % 64) >= thr;
    CHECK(kept > 29400 && kept < 30600, "keep rate %d / 40000 for p = 0.25", kept);
    // dropout_lanes (the CPU mask's SIMD form) gives dropout_block's bits lane by lane;
    // negative control: the lanes of the next chunk do not.
    {
        int same = 1, shifted_same = 1;
        for (uint32_t pos = 0; pos < 64; pos++)
            for (uint32_t q0 = 0; q0 < 64; q0 += PHILOX_LANES) {
                uint32_t r[4][PHILOX_LANES], n[4][PHILOX_LANES];
                dropout_lanes(&d, 5 + ((uint64_t)pos << 33), pos, q0, r);
                dropout_lanes(&d, 5 + ((uint64_t)pos << 33), pos, q0 + 1, n);
                for (int j = 0; j < PHILOX_LANES; j++)
                    for (int w = 0; w < 4; w++) {
                        same &= r[w][j] == dropout_block(&d, 5 + ((uint64_t)pos << 33), pos, q0 + (uint32_t)j).v[w];
                        shifted_same &= n[w][j] == r[w][j];
                    }
            }
        CHECK(same, "dropout_lanes differs from dropout_block");
        CHECK(!shifted_same, "negative control: the lanes of chunk q0 + 1 matched those of q0");
    }
    printf("test_philox: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
