// cpu_kernels.c — the CPU backend's row kernels (cpu_kernels.h) in one variant per
// instruction set: portable C (the definition of the bits), the same C compiled for AVX2,
// and for AVX-512 with the Philox rounds written out in intrinsics. The floating-point
// arithmetic is the same C in every variant (tanh_f32, exp_f32, the mask multiply, the
// fixed-order partial sums) and is never contracted into FMAs (-std=c11 keeps
// -ffp-contract=off), so every variant gives the same bits; the Philox words are integers,
// exact by construction.
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "model/cpu_kernels.h"
#include "base/exp_f32.h"
#include "base/row_reduce.h"
#include "base/tanh_f32.h"

typedef uint32_t u32x4 __attribute__((vector_size(16)));  // a GCC/clang vector extension

// Lanes i0..i3 of the 8 lanes of a and b (a's are 0-3, b's 4-7): GCC and clang spell it differently.
#if defined(__clang__)
#define SHUF4(a, b, i0, i1, i2, i3) __builtin_shufflevector(a, b, i0, i1, i2, i3)
#else
#define SHUF4(a, b, i0, i1, i2, i3) __builtin_shuffle(a, b, (u32x4){i0, i1, i2, i3})
#endif

// --- portable (and AVX2): the mask PHILOX_LANES blocks at a time ------------------------

// The dropout scale of one position's H units (0 or inv): unit i is kept iff word i mod 4
// of dropout_block(block, pos, i / 4) >= thr; PHILOX_LANES blocks at a time (dropout_lanes,
// the same bits), the last H mod 32 units one block at a time.
static inline __attribute__((always_inline)) void dropout_row(float *mm, int H, const RngStream *s, uint64_t block,
                                                              uint32_t pos, uint32_t thr, float inv) {
    uint32_t inv_bits;  // kept: the bits of inv, dropped: those of +0.0f, selected without a branch
    memcpy(&inv_bits, &inv, sizeof inv_bits);
    int i = 0;
    for (; i + 4 * PHILOX_LANES <= H; i += 4 * PHILOX_LANES) {
        uint32_t r[4][PHILOX_LANES];
        dropout_lanes(s, block, pos, (uint32_t)i >> 2, r);
        for (int w = 0; w < 4; w++)  // word w of every chunk: the scale bits
            for (int j = 0; j < PHILOX_LANES; j++) r[w][j] = -(uint32_t)(r[w][j] >= thr) & inv_bits;
        // unit 4j + w is word w of chunk j: 4x4 transposes put each chunk's words side by side
        for (int j = 0; j < PHILOX_LANES; j += 4) {
            u32x4 a, b, c, e;
            memcpy(&a, &r[0][j], sizeof a), memcpy(&b, &r[1][j], sizeof b);
            memcpy(&c, &r[2][j], sizeof c), memcpy(&e, &r[3][j], sizeof e);
            u32x4 ab_lo = SHUF4(a, b, 0, 4, 1, 5), ab_hi = SHUF4(a, b, 2, 6, 3, 7);
            u32x4 ce_lo = SHUF4(c, e, 0, 4, 1, 5), ce_hi = SHUF4(c, e, 2, 6, 3, 7);
            u32x4 out[4] = {SHUF4(ab_lo, ce_lo, 0, 1, 4, 5), SHUF4(ab_lo, ce_lo, 2, 3, 6, 7), SHUF4(ab_hi, ce_hi, 0, 1, 4, 5),
                            SHUF4(ab_hi, ce_hi, 2, 3, 6, 7)};
            memcpy(mm + i + 4 * j, out, sizeof out);
        }
    }
    for (; i < H; i += 4) {
        Philox4 r = dropout_block(s, block, pos, (uint32_t)i >> 2);
        for (int q = 0; q < 4 && i + q < H; q++) mm[i + q] = r.v[q] >= thr ? inv : 0.0f;
    }
}

// The GPT's keep flags, PHILOX_LANES blocks at a time (dropout_lanes: the same bits), the
// last n mod 32 units one block at a time.
static inline __attribute__((always_inline)) void dropout_keep_row(uint8_t *keep, int n, const RngStream *s, uint64_t block,
                                                                   uint32_t pos, uint32_t q0, uint32_t thr) {
    int i = 0;
    for (; i + 4 * PHILOX_LANES <= n; i += 4 * PHILOX_LANES) {
        uint32_t r[4][PHILOX_LANES];
        dropout_lanes(s, block, pos, q0 + ((uint32_t)i >> 2), r);
        for (int j = 0; j < PHILOX_LANES; j++)
            for (int w = 0; w < 4; w++) keep[i + 4 * j + w] = r[w][j] >= thr;
    }
    for (; i < n; i += 4) {
        Philox4 r = dropout_block(s, block, pos, q0 + ((uint32_t)i >> 2));
        for (int w = 0; w < 4 && i + w < n; w++) keep[i + w] = r.v[w] >= thr;
    }
}

// tanh and the masked activation of a row whose mask is in mm (or NULL: no dropout, the
// mask would be 1 and x·1 = x). The loops vectorize in whichever variant inlines them.
static inline __attribute__((always_inline)) void tanh_row(float *hh, float *hd, const float *mm, int H) {
    if (mm) {
        for (int i = 0; i < H; i++) {
            float h = tanh_f32(hh[i]);
            hh[i] = h, hd[i] = h * mm[i];
        }
    } else {
        for (int i = 0; i < H; i++) hh[i] = hd[i] = tanh_f32(hh[i]);
    }
}

// The log-softmax row (SumExpFn, ScaledSoftmaxFn): the loops vectorize in every variant,
// the eight partial sums being eight lanes. 32 exps are taken before their four adds into
// the lanes (the same adds in the same order): four independent polynomials in flight
// instead of one chain waiting on the lanes, 1.38x on rows of 257 (2.43 → 1.76 ns a value).
static inline __attribute__((always_inline)) double sum_exp_row(const float *y, float *e, int V, float mx) {
    double acc[8] = {0};
    int v = 0;
    for (; v + 32 <= V; v += 32) {
        for (int l = 0; l < 32; l++) e[v + l] = exp_f32(y[v + l] - mx);
        for (int q = 0; q < 32; q += 8)
            for (int l = 0; l < 8; l++) acc[l] += (double)e[v + q + l];
    }
    for (; v + 8 <= V; v += 8)
        for (int l = 0; l < 8; l++) {
            float x = exp_f32(y[v + l] - mx);
            e[v + l] = x, acc[l] += (double)x;
        }
    for (int l = 0; v + l < V; l++) {
        float x = exp_f32(y[v + l] - mx);
        e[v + l] = x, acc[l] += (double)x;
    }
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static inline __attribute__((always_inline)) void scaled_softmax_row(float *y, const float *e, int V, double inv_s, float sw) {
    for (int v = 0; v < V; v++) y[v] = sw * (float)((double)e[v] * inv_s);
}

// AttnSoftmaxFn and AttnSoftmaxBackwardFn: one pass of row kernels over the row, in L1.
static inline __attribute__((always_inline)) void attn_softmax_row(float *restrict p, const float *restrict s, float *restrict ex,
                                                                   int n, int nz) {
    float mx = row_max(s, n);
    double sum = sum_exp_row(s, ex, n, mx);
    scaled_softmax_row(p, ex, n, 1.0 / sum, 1.0f);
    for (int u = 0; u < nz; u++) p[n + u] = 0.0f;
}
static inline __attribute__((always_inline)) void attn_softmax_backward_row(float *restrict ds, float *restrict dp,
                                                                            const float *restrict p, const uint8_t *restrict keep,
                                                                            float inv, int n, int nz) {
    if (keep)
        for (int u = 0; u < n; u++) dp[u] *= keep[u] ? inv : 0.0f;
    float dot = (float)row_dot(p, dp, n);
    for (int u = 0; u < n; u++) ds[u] = p[u] * (dp[u] - dot);
    for (int u = 0; u < nz; u++) ds[n + u] = 0.0f;
}

// TanhBackwardFn: the product keeps its order (dz·(mm·(1 − hh²))); the mask 1 is left out
// without dropout (1·x = x, the same bits).
static inline __attribute__((always_inline)) void tanh_backward_row(float *restrict dz, float *restrict gb, const float *restrict hh,
                                                                    const float *restrict mm, int H) {
    if (mm)
        for (int i = 0; i < H; i++) dz[i] *= mm[i] * (1.0f - hh[i] * hh[i]), gb[i] += dz[i];
    else
        for (int i = 0; i < H; i++) dz[i] *= 1.0f - hh[i] * hh[i], gb[i] += dz[i];
}

// GeluFn and GeluBackwardFn: element-wise, the same C in every variant.
#define GELU_S 0.7978845608028654f  // √(2/π)
#define GELU_C 0.044715f
static inline __attribute__((always_inline)) void gelu_row(float *restrict out, const float *restrict in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = in[i];
        out[i] = (0.5f * x) * (1.0f + tanh_f32(GELU_S * (x + GELU_C * x * x * x)));
    }
}
static inline __attribute__((always_inline)) void gelu_backward_row(float *restrict d, const float *restrict in, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float x = in[i], t = tanh_f32(GELU_S * (x + GELU_C * x * x * x));
        d[i] *= 0.5f * (1.0f + t) + (0.5f * x) * (1.0f - t * t) * GELU_S * (1.0f + 3.0f * GELU_C * x * x);
    }
}

// LayerNormFn and LayerNormBackwardFn: the eight-lane sums vectorize as sum_exp's.
static inline __attribute__((always_inline)) double lanes_sum(const double acc[8]) {
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}
static inline __attribute__((always_inline)) void layernorm_row(float *restrict y, float *restrict stat, const float *restrict x,
                                                                const float *restrict w, const float *restrict b, int C, double eps) {
    double acc[8] = {0};
    int i = 0;
    for (; i + 8 <= C; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += (double)x[i + l];
    for (int l = 0; i + l < C; l++) acc[l] += (double)x[i + l];
    double mean = lanes_sum(acc) / C, var[8] = {0};
    for (i = 0; i + 8 <= C; i += 8)
        for (int l = 0; l < 8; l++) {
            double e = (double)x[i + l] - mean;
            var[l] += e * e;
        }
    for (int l = 0; i + l < C; l++) {
        double e = (double)x[i + l] - mean;
        var[l] += e * e;
    }
    float mf = (float)mean, rstd = (float)(1.0 / sqrt(lanes_sum(var) / C + eps));
    for (i = 0; i < C; i++) y[i] = (x[i] - mf) * rstd * w[i] + b[i];
    stat[0] = mf, stat[1] = rstd;
}
static inline __attribute__((always_inline)) void layernorm_backward_row(float *restrict dx, float *restrict dw, float *restrict db,
                                                                         const float *restrict d, const float *restrict x,
                                                                         const float *restrict stat, const float *restrict w, int C) {
    float mf = stat[0], rstd = stat[1];
    double dm[8] = {0}, dnm[8] = {0};
    int i = 0;
    for (; i + 8 <= C; i += 8)
        for (int l = 0; l < 8; l++) {
            float norm = (x[i + l] - mf) * rstd, dn = w[i + l] * d[i + l];
            dm[l] += (double)dn, dnm[l] += (double)dn * (double)norm;
        }
    for (int l = 0; i + l < C; l++) {
        float norm = (x[i + l] - mf) * rstd, dn = w[i + l] * d[i + l];
        dm[l] += (double)dn, dnm[l] += (double)dn * (double)norm;
    }
    float dmf = (float)(lanes_sum(dm) / C), dnmf = (float)(lanes_sum(dnm) / C);
    for (i = 0; i < C; i++) {
        float norm = (x[i] - mf) * rstd, dn = w[i] * d[i];
        dw[i] += norm * d[i];
        db[i] += d[i];
        dx[i] += (dn - dmf - norm * dnmf) * rstd;
    }
}

// Each variant: its row kernels are the inline bodies above compiled for its instruction set.
#define ROW_VARIANT(isa, attr)                                                                                          \
    attr static double sum_exp_##isa(const float *y, float *e, int V, float mx) { return sum_exp_row(y, e, V, mx); } \
    attr static void scaled_softmax_##isa(float *y, const float *e, int V, double inv_s, float sw) {                 \
        scaled_softmax_row(y, e, V, inv_s, sw);                                                                       \
    }                                                                                                                 \
    attr static void attn_softmax_##isa(float *p, const float *s, float *ex, int n, int nz) {                          \
        attn_softmax_row(p, s, ex, n, nz);                                                                            \
    }                                                                                                                 \
    attr static void attn_softmax_backward_##isa(float *ds, float *dp, const float *p, const uint8_t *keep, float inv, int n, \
                                                 int nz) {                                                            \
        attn_softmax_backward_row(ds, dp, p, keep, inv, n, nz);                                                       \
    }                                                                                                                 \
    attr static void tanh_backward_##isa(float *dz, float *gb, const float *hh, const float *mm, int H) {             \
        tanh_backward_row(dz, gb, hh, mm, H);                                                                         \
    }                                                                                                                 \
    attr static void gelu_##isa(float *out, const float *in, size_t n) { gelu_row(out, in, n); }                     \
    attr static void gelu_backward_##isa(float *d, const float *in, size_t n) { gelu_backward_row(d, in, n); }              \
    attr static void layernorm_##isa(float *y, float *stat, const float *x, const float *w, const float *b, int C, double eps) { \
        layernorm_row(y, stat, x, w, b, C, eps);                                                                      \
    }                                                                                                                 \
    attr static void layernorm_backward_##isa(float *dx, float *dw, float *db, const float *d, const float *x, const float *stat, \
                                              const float *w, int C) {                                                \
        layernorm_backward_row(dx, dw, db, d, x, stat, w, C);                                                         \
    }
ROW_VARIANT(portable, )
ROW_VARIANT(avx2, __attribute__((target("avx2"))))

// The hidden row of the C variants: the mask PHILOX_LANES blocks at a time, then tanh.
#define HIDDEN_ROW_C(isa, attr)                                                                                       \
    attr static void hidden_row_##isa(float *hh, float *hd, float *mm, int H, const RngStream *s, uint64_t block,   \
                                      uint32_t pos, uint32_t thr, float inv) {                                      \
        if (mm) dropout_row(mm, H, s, block, pos, thr, inv);                                                          \
        tanh_row(hh, hd, mm, H);                                                                                      \
    }
HIDDEN_ROW_C(portable, )
HIDDEN_ROW_C(avx2, __attribute__((target("avx2"))))
static void dropout_keep_portable(uint8_t *keep, int n, const RngStream *s, uint64_t block, uint32_t pos, uint32_t q0, uint32_t thr) {
    dropout_keep_row(keep, n, s, block, pos, q0, thr);
}
__attribute__((target("avx2"))) static void dropout_keep_avx2(uint8_t *keep, int n, const RngStream *s, uint64_t block, uint32_t pos,
                                                              uint32_t q0, uint32_t thr) {
    dropout_keep_row(keep, n, s, block, pos, q0, thr);
}

// --- AVX-512: 16 Philox blocks (64 units) per step ---------------------------------------
// Each 32-bit Philox word sits in the low half of a 64-bit lane, so vpmuludq gives the
// whole 32×32 → 64 product of a round (hi = the upper half, lo = the lane itself; the upper
// halves of lanes are ignored until the words are packed). 16 blocks = two registers per word.
// The counter of block j is (block, pos, q0 + j): only word 3 differs between blocks, so
// round 1 differs in word 2 only and round 2 in words 0 and 1: they are computed once per
// row (scalar) and the rounds that differ per block start from there (the same bits).

#define AVX512 __attribute__((target("avx512f")))

ROW_VARIANT(avx512, AVX512)

AVX512 static inline __m512i xor3(__m512i a, __m512i b, __m512i c) { return _mm512_ternarylogic_epi64(a, b, c, 0x96); }

// Words 0..3 of 16 blocks (q0 .. q0+15) in 64-bit lanes: w[2·word + half].
AVX512 static inline void philox16(__m512i w[8], const RngStream *s, uint32_t c0_r1, uint32_t c1_r1, uint32_t c3_r1,
                                   uint32_t hi0_k1_r1, uint32_t q0) {
    const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    const __m512i m0 = _mm512_set1_epi64(M0), m1 = _mm512_set1_epi64(M1);
    // after round 1: c0, c1, c3 are the row's; c2 = hi(M0·block_lo) ^ (q0 + j) ^ k1
    __m512i q_lo = _mm512_add_epi64(_mm512_set1_epi64(q0), _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7));
    __m512i q_hi = _mm512_add_epi64(q_lo, _mm512_set1_epi64(8));
    __m512i c2[2] = {_mm512_xor_si512(q_lo, _mm512_set1_epi64(hi0_k1_r1)), _mm512_xor_si512(q_hi, _mm512_set1_epi64(hi0_k1_r1))};
    // round 2: words 2 and 3 come from the row's c0 (scalar), words 0 and 1 from c2
    uint32_t k0 = s->key[0] + W0, k1 = s->key[1] + W1;
    uint64_t p0 = (uint64_t)M0 * c0_r1;
    __m512i c0[2], c1[2], c2n = _mm512_set1_epi64((uint32_t)(p0 >> 32) ^ c3_r1 ^ k1), c3n = _mm512_set1_epi64((uint32_t)p0);
    __m512i kv0 = _mm512_set1_epi64(k0 ^ c1_r1);
    for (int h = 0; h < 2; h++) {
        __m512i p1 = _mm512_mul_epu32(c2[h], m1);
        c0[h] = _mm512_xor_si512(_mm512_srli_epi64(p1, 32), kv0);
        c1[h] = p1;
    }
    __m512i c3[2] = {c3n, c3n};
    c2[0] = c2[1] = c2n;
    // rounds 3..10
    for (int round = 2; round < 10; round++) {
        k0 += W0, k1 += W1;
        __m512i kk0 = _mm512_set1_epi64(k0), kk1 = _mm512_set1_epi64(k1);
        for (int h = 0; h < 2; h++) {
            __m512i a = _mm512_mul_epu32(c0[h], m0), b = _mm512_mul_epu32(c2[h], m1);
            __m512i n0 = xor3(_mm512_srli_epi64(b, 32), c1[h], kk0), n2 = xor3(_mm512_srli_epi64(a, 32), c3[h], kk1);
            c0[h] = n0, c1[h] = b, c2[h] = n2, c3[h] = a;
        }
    }
    for (int h = 0; h < 2; h++) w[0 + h] = c0[h], w[2 + h] = c1[h], w[4 + h] = c2[h], w[6 + h] = c3[h];
}

AVX512 static void hidden_row_avx512(float *hh, float *hd, float *mm, int H, const RngStream *s, uint64_t block, uint32_t pos,
                                     uint32_t thr, float inv) {
    if (mm) {
        const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
        // round 1 of every block of the row (counter (block, pos, q), key (k0, k1))
        uint64_t p0 = (uint64_t)M0 * (uint32_t)block, p1 = (uint64_t)M1 * pos;
        uint32_t c0_r1 = (uint32_t)(p1 >> 32) ^ (uint32_t)(block >> 32) ^ s->key[0], c1_r1 = (uint32_t)p1, c3_r1 = (uint32_t)p0;
        uint32_t hi0_k1 = (uint32_t)(p0 >> 32) ^ s->key[1];
        const __m512i thrv = _mm512_set1_epi32((int)thr);
        const __m512 invv = _mm512_set1_ps(inv);
        // unit 4j + w is word w of block j: pair words (0, 1) and (2, 3) of each block in one
        // 64-bit lane, then interleave the pairs of consecutive blocks
        const __m512i lo4 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), hi4 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
        for (int i = 0; i < H; i += 64) {
            __m512i w[8];
            philox16(w, s, c0_r1, c1_r1, c3_r1, hi0_k1, (uint32_t)i >> 2);
            float tail[64];
            float *dst = i + 64 <= H ? mm + i : tail;
            for (int h = 0; h < 2; h++) {
                __m512i w01 = _mm512_mask_shuffle_epi32(w[0 + h], 0xAAAA, w[2 + h], _MM_PERM_CCAA);
                __m512i w23 = _mm512_mask_shuffle_epi32(w[4 + h], 0xAAAA, w[6 + h], _MM_PERM_CCAA);
                __m512i u[2] = {_mm512_permutex2var_epi64(w01, lo4, w23), _mm512_permutex2var_epi64(w01, hi4, w23)};
                for (int e = 0; e < 2; e++) {
                    __mmask16 keep = _mm512_cmp_epu32_mask(u[e], thrv, _MM_CMPINT_NLT);
                    _mm512_storeu_ps(dst + 32 * h + 16 * e, _mm512_maskz_mov_ps(keep, invv));
                }
            }
            if (dst == tail) memcpy(mm + i, tail, (size_t)(H - i) * sizeof(float));
        }
    }
    tanh_row(hh, hd, mm, H);
}

// The GPT's keep flags, 64 units per philox16 (the counters' word 3 is q0 + j there too).
AVX512 static void dropout_keep_avx512(uint8_t *keep, int n, const RngStream *s, uint64_t block, uint32_t pos, uint32_t q0,
                                       uint32_t thr) {
    const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
    uint64_t p0 = (uint64_t)M0 * (uint32_t)block, p1 = (uint64_t)M1 * pos;
    uint32_t c0_r1 = (uint32_t)(p1 >> 32) ^ (uint32_t)(block >> 32) ^ s->key[0], c1_r1 = (uint32_t)p1, c3_r1 = (uint32_t)p0;
    uint32_t hi0_k1 = (uint32_t)(p0 >> 32) ^ s->key[1];
    const __m512i thrv = _mm512_set1_epi32((int)thr), one = _mm512_set1_epi32(1);
    const __m512i lo4 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), hi4 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i w[8];
        philox16(w, s, c0_r1, c1_r1, c3_r1, hi0_k1, q0 + ((uint32_t)i >> 2));
        for (int h = 0; h < 2; h++) {  // unit order as hidden_row_avx512's
            __m512i w01 = _mm512_mask_shuffle_epi32(w[0 + h], 0xAAAA, w[2 + h], _MM_PERM_CCAA);
            __m512i w23 = _mm512_mask_shuffle_epi32(w[4 + h], 0xAAAA, w[6 + h], _MM_PERM_CCAA);
            __m512i u[2] = {_mm512_permutex2var_epi64(w01, lo4, w23), _mm512_permutex2var_epi64(w01, hi4, w23)};
            for (int e = 0; e < 2; e++) {
                __mmask16 k = _mm512_cmp_epu32_mask(u[e], thrv, _MM_CMPINT_NLT);
                _mm_storeu_si128((__m128i *)(keep + i + 32 * h + 16 * e), _mm512_cvtepi32_epi8(_mm512_maskz_mov_epi32(k, one)));
            }
        }
    }
    if (i < n) dropout_keep_row(keep + i, n - i, s, block, pos, q0 + ((uint32_t)i >> 2), thr);
}

static int always(void) { return 1; }
static int has_avx2(void) { return __builtin_cpu_supports("avx2"); }
static int has_avx512(void) { return __builtin_cpu_supports("avx512f"); }

#define KERNELS(isa, has)                                                                                              \
    {.name = #isa, .supported = has, .hidden_row = hidden_row_##isa, .sum_exp = sum_exp_##isa,                       \
     .scaled_softmax = scaled_softmax_##isa, .attn_softmax = attn_softmax_##isa,                                    \
     .attn_softmax_backward = attn_softmax_backward_##isa, .tanh_backward = tanh_backward_##isa, .gelu = gelu_##isa,              \
     .gelu_backward = gelu_backward_##isa, .layernorm = layernorm_##isa, .layernorm_backward = layernorm_backward_##isa,      \
     .dropout_keep = dropout_keep_##isa}
const CpuKernels cpu_kernels_all[] = {KERNELS(avx512, has_avx512), KERNELS(avx2, has_avx2), KERNELS(portable, always)};
const int cpu_kernels_count = sizeof cpu_kernels_all / sizeof cpu_kernels_all[0];

const CpuKernels *cpu_kernels_select(void) {
    static const CpuKernels *chosen;
    if (!chosen) {
        int i = 0;
        while (!cpu_kernels_all[i].supported()) i++;  // the last one always is
        chosen = &cpu_kernels_all[i];
    }
    return chosen;
}

double cpu_row_loss(const CpuKernels *k, float *y, float *ex, int V, int tgt, float w, float sw, int backward,
                    int64_t *correct) {
    int arg = 0;
    float mx = y[0];
    for (int v = 1; v < V; v++)
        if (y[v] > mx) mx = y[v], arg = v;
    double s = k->sum_exp(y, ex, V, mx);  // Σ exp(y − mx), exp in float (exp_f32)
    double lse = (double)mx + log(s);
    double loss = (double)w * (lse - (double)y[tgt]);
    if (correct) *correct += arg == tgt;
    if (backward) {
        k->scaled_softmax(y, ex, V, 1.0 / s, sw);  // exp(y − lse) = exp(y − mx) / s
        y[tgt] -= sw;
    }
    return loss;
}
