// sha256.h — SHA-256 (OpenSSL's EVP) for data locks, checksums and manifests.
#ifndef DDPTOK_SHA256_H
#define DDPTOK_SHA256_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// SHA-256 in pieces (OpenSSL's EVP): begin, add any number of times, then hex (which
// writes 64 hex digits and a NUL and frees the context).
typedef struct evp_md_ctx_st Sha256;
Sha256 *sha256_begin(void);
void sha256_add(Sha256 *h, const void *data, size_t n);
void sha256_hex(Sha256 *h, char out[65]);
// The same, as the 32 raw bytes.
void sha256_digest(Sha256 *h, unsigned char out[32]);
// Whether `s` is 64 lowercase hex digits (a stored lock or checksum read from a file is
// checked before it is compared or printed).
static inline int is_sha256_hex(const char *s) {
    int n = 0;
    while (n < 64 && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) n++;
    return n == 64 && s[64] == 0;
}

#ifdef __cplusplus
}
#endif
#endif
