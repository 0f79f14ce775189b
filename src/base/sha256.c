// sha256.c — SHA-256 through OpenSSL's EVP (see sha256.h).
#include "base/sha256.h"

#include <openssl/evp.h>
#include <stdio.h>

#include "base/report.h"

Sha256 *sha256_begin(void) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    ASSERT(ok);
    return md;
}

void sha256_add(Sha256 *h, const void *data, size_t n) {
    int ok = EVP_DigestUpdate(h, data, n) == 1;
    ASSERT(ok);
}

void sha256_digest(Sha256 *h, unsigned char out[32]) {
    unsigned len = 0;
    int ok = EVP_DigestFinal_ex(h, out, &len) == 1 && len == 32;
    ASSERT(ok);
    EVP_MD_CTX_free(h);
}

void sha256_hex(Sha256 *h, char out[65]) {
    unsigned char d[32];
    sha256_digest(h, d);
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
    out[64] = 0;
}
