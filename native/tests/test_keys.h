/* test_keys.h: fixed AEAD keys for the unit tests of sealing on crypto workers
 * (test_sealpool.c, test_udp_sealbatch.c): both directions distinct, and a key update
 * every 16 records or datagrams, so inside every batch. */
#ifndef ISM_TESTS_TEST_KEYS_H
#define ISM_TESTS_TEST_KEYS_H

#include <string.h>

#include "aead.h"

static inline void test_keys(ism_aead_keys *k, int suite)
{
    memset(k, 0, sizeof *k);
    k->suite = suite;
    k->rekey_log2 = 4;
    for (int i = 0; i < ISM_AEAD_KEY_LEN; i++) {
        k->c2s.secret[i] = (uint8_t)(i * 7 + 1);
        k->s2c.secret[i] = (uint8_t)(i * 11 + 3);
    }
    for (int i = 0; i < ISM_AEAD_IV_LEN; i++) {
        k->c2s.iv[i] = (uint8_t)(i * 13 + 5);
        k->s2c.iv[i] = (uint8_t)(i * 17 + 9);
    }
}

#endif
