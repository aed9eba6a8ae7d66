/* Tests of the bloomslice C ABI through the generated header, linked the
 * way a C service links it: one handle type for every layout (one filter
 * length, sets sized from the data, a manifest's shard files, a level
 * index file), the same read functions on each. Run under valgrind in CI
 * (.ci/run). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bloomslice.h"

static int passed = 0, failed = 0;

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (cond) {                                                               \
      passed++;                                                               \
    } else {                                                                  \
      failed++;                                                               \
      fprintf(stderr, "%s:%d: FAILED: %s (last error: %s)\n", __FILE__,       \
              __LINE__, #cond, bloomslice_last_error());                      \
    }                                                                         \
  } while (0)

#define SETS 20
#define KEYS_PER_SET 200
#define QUERIES 3000

static const uint8_t *u8(const char *s) { return (const uint8_t *)s; }

/* Key j of set i ("s<i>-k<j>"), or an absent key for i >= SETS. */
static size_t key_of(int i, int j, char *buf) {
  return (size_t)sprintf(buf, "s%d-k%d", i, j);
}

/* The query keys: every other one inserted, the others absent. */
static char query_keys[QUERIES][32];
static const uint8_t *query_ptrs[QUERIES];
static size_t query_lens[QUERIES];

static void make_queries(void) {
  for (int q = 0; q < QUERIES; q++) {
    int set = q % 2 == 0 ? (q / 2) % SETS : SETS + q;
    query_lens[q] = key_of(set, q % KEYS_PER_SET, query_keys[q]);
    query_ptrs[q] = u8(query_keys[q]);
  }
}

/* Answers of one handle: CSR ids and offsets. */
typedef struct {
  uint64_t *ids;
  size_t offsets[QUERIES + 1];
  size_t total;
} answers;

static int batch(const BloomsliceIndex *index, answers *a) {
  size_t cap = (size_t)QUERIES * SETS;
  a->ids = malloc(cap * sizeof(uint64_t));
  return bloomslice_query_batch(index, query_ptrs, query_lens, QUERIES, a->ids, cap,
                                a->offsets, &a->total) == BLOOMSLICE_STATUS_OK;
}

static int same(const answers *a, const answers *b) {
  return a->total == b->total &&
         memcmp(a->offsets, b->offsets, sizeof a->offsets) == 0 &&
         memcmp(a->ids, b->ids, a->total * sizeof(uint64_t)) == 0;
}

static BloomsliceIndex *build(void) {
  BloomsliceIndex *index = NULL;
  if (bloomslice_index_new_sliced_for_capacity(1000, 0.01, 42, &index) != BLOOMSLICE_STATUS_OK) return NULL;
  static char keys[KEYS_PER_SET][32];
  const uint8_t *ptrs[KEYS_PER_SET];
  size_t lens[KEYS_PER_SET];
  for (int i = 0; i < SETS; i++) {
    for (int j = 0; j < KEYS_PER_SET; j++) {
      lens[j] = key_of(i, j, keys[j]);
      ptrs[j] = u8(keys[j]);
    }
    char name[16];
    int n = sprintf(name, "set%02d", i);
    uint64_t id = 99;
    if (bloomslice_index_add_set(index, u8(name), (size_t)n, ptrs, lens, KEYS_PER_SET, &id) !=
            BLOOMSLICE_STATUS_OK ||
        id != (uint64_t)i)
      return NULL;
  }
  return index;
}

static void test_no_false_negatives_and_batch_equals_single(const BloomsliceIndex *index) {
  int missing = 0, mismatched = 0;
  char key[32];
  uint64_t ids[SETS];
  size_t n;
  for (int i = 0; i < SETS; i++)
    for (int j = 0; j < KEYS_PER_SET; j++) {
      size_t len = key_of(i, j, key);
      int found = 0;
      if (bloomslice_query(index, u8(key), len, ids, SETS, &n) != BLOOMSLICE_STATUS_OK) missing++;
      for (size_t x = 0; x < n; x++) found |= ids[x] == (uint64_t)i;
      missing += !found;
    }
  EXPECT(missing == 0);
  answers a;
  EXPECT(batch(index, &a));
  for (int q = 0; q < QUERIES; q++) {
    bloomslice_query(index, query_ptrs[q], query_lens[q], ids, SETS, &n);
    if (n != a.offsets[q + 1] - a.offsets[q] ||
        memcmp(ids, a.ids + a.offsets[q], n * sizeof(uint64_t)) != 0)
      mismatched++;
  }
  EXPECT(mismatched == 0);
  EXPECT(a.offsets[0] == 0 && a.offsets[QUERIES] == a.total);
  EXPECT(a.total >= QUERIES / 2); /* every present key matches its set */

  /* The same batch as caller hashes. */
  uint64_t *hashes = malloc(QUERIES * sizeof(uint64_t));
  int hashed = 1;
  for (int q = 0; q < QUERIES; q++)
    hashed &= bloomslice_hash_key(index, query_ptrs[q], query_lens[q], &hashes[q]) == BLOOMSLICE_STATUS_OK;
  EXPECT(hashed);
  answers h;
  size_t cap = (size_t)QUERIES * SETS;
  h.ids = malloc(cap * sizeof(uint64_t));
  EXPECT(bloomslice_query_batch_hashes(index, hashes, QUERIES, h.ids, cap, h.offsets, &h.total) ==
         BLOOMSLICE_STATUS_OK);
  EXPECT(same(&a, &h));
  EXPECT(bloomslice_query_hash(index, hashes[0], ids, SETS, &n) == BLOOMSLICE_STATUS_OK);
  EXPECT(n == a.offsets[1] && memcmp(ids, a.ids, n * sizeof(uint64_t)) == 0);

  /* Short buffers: complete counts, partial ids, BUFFER_TOO_SMALL. */
  size_t total = 0;
  EXPECT(bloomslice_query_batch_hashes(index, hashes, QUERIES, h.ids, 3, h.offsets, &total) ==
         BLOOMSLICE_STATUS_BUFFER_TOO_SMALL);
  EXPECT(total == a.total && memcmp(h.offsets, a.offsets, sizeof a.offsets) == 0);
  EXPECT(strstr(bloomslice_last_error(), "room for 3") != NULL);
  EXPECT(bloomslice_query(index, u8("s3-k1"), 5, NULL, 0, &n) == BLOOMSLICE_STATUS_BUFFER_TOO_SMALL);
  EXPECT(n >= 1);
  /* An empty batch is fine and writes one offset. */
  EXPECT(bloomslice_query_batch(index, NULL, NULL, 0, NULL, 0, h.offsets, &total) == BLOOMSLICE_STATUS_OK);
  EXPECT(total == 0 && h.offsets[0] == 0);
  free(hashes);
  free(h.ids);
  free(a.ids);
}

static void test_bad_arguments(BloomsliceIndex *index) {
  uint64_t ids[4];
  size_t n, offsets[2], total;
  BloomsliceIndex *out = NULL;
  EXPECT(bloomslice_query(NULL, u8("x"), 1, ids, 4, &n) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(strstr(bloomslice_last_error(), "index is null") != NULL);
  EXPECT(bloomslice_query(index, NULL, 5, ids, 4, &n) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_query(index, u8("x"), 1, NULL, 4, &n) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_query(index, u8("x"), 1, ids, 4, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  const uint8_t *keys[1] = {NULL};
  size_t lens[1] = {3};
  EXPECT(bloomslice_query_batch(index, keys, lens, 1, ids, 4, offsets, &total) ==
         BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(strstr(bloomslice_last_error(), "key 0") != NULL);
  EXPECT(bloomslice_query_batch(index, keys, lens, 1, ids, 4, NULL, &total) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  uint64_t aligned[2] = {1, 2};
  const uint64_t *misaligned = (const uint64_t *)((const char *)aligned + 1);
  EXPECT(bloomslice_query_batch_hashes(index, misaligned, 1, ids, 4, offsets, &total) ==
         BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_new_sliced(0, 7, 0, &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT && out == NULL);
  EXPECT(bloomslice_index_new_sliced(1000, 0, 0, &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_new_sliced_for_capacity(0, 0.01, 0, &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_new_sliced_for_capacity(100, 0.0, 0, &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_new_sliced(1000, 7, 0, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_new(0.0, 0, &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT && out == NULL);
  EXPECT(bloomslice_index_new(0.01, 0, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_open_manifest(NULL, false, false, &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_load(NULL, &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_load("", &out) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_save(index, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_add_set(index, u8(""), 0, NULL, NULL, 0, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_add_set(index, u8("set00"), 5, NULL, NULL, 0, NULL) == BLOOMSLICE_STATUS_ALREADY_EXISTS);
  EXPECT(bloomslice_index_remove_set(index, u8("nope"), 4) == BLOOMSLICE_STATUS_NOT_FOUND);
  EXPECT(bloomslice_index_set_id(index, u8("nope"), 4, ids) == BLOOMSLICE_STATUS_NOT_FOUND);
  EXPECT(bloomslice_index_set_name(index, 12345, NULL, 0, &n) == BLOOMSLICE_STATUS_NOT_FOUND);
  EXPECT(bloomslice_index_info(index, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_len(index, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_contains(NULL, 0, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_index_add_keys(index, u8("nope"), 4, NULL, NULL, 0) == BLOOMSLICE_STATUS_NOT_FOUND);
  bloomslice_index_free(NULL);
}

static void test_filters_and_hashes(BloomsliceIndex *index) {
  BloomsliceInfo info;
  EXPECT(bloomslice_index_info(index, &info) == BLOOMSLICE_STATUS_OK);
  EXPECT(info.layout == BLOOMSLICE_LAYOUT_SLICED && info.m == 10112 && info.k == 7 && info.seed == 42 &&
         info.sets == SETS && info.parts == 1 && !info.mapped);
  uint64_t len = 0;
  bool has = false;
  EXPECT(bloomslice_index_len(index, &len) == BLOOMSLICE_STATUS_OK && len == SETS);
  EXPECT(bloomslice_index_contains(index, SETS - 1, &has) == BLOOMSLICE_STATUS_OK && has);
  EXPECT(bloomslice_index_contains(index, 12345, &has) == BLOOMSLICE_STATUS_OK && !has);
  size_t words = (size_t)((info.m + 63) / 64);
  uint64_t *bits = calloc(words + 1, sizeof(uint64_t));
  uint64_t ids[SETS + 4], empty_id, full_id, hashed_id;
  size_t n;
  /* An empty filter matches nothing; a full one matches everything. */
  EXPECT(bloomslice_index_add_filter(index, u8("empty"), 5, bits, words, &empty_id) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_add_filter(index, u8("bad"), 3, bits, words + 1, NULL) ==
         BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  for (size_t w = 0; w < words; w++) bits[w] = ~(uint64_t)0;
  /* Bits set beyond m are refused (m = 1000 leaves 24 padding bits). */
  BloomsliceIndex *small = NULL;
  EXPECT(bloomslice_index_new_sliced(1000, 7, 0, &small) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_add_filter(small, u8("bad"), 3, bits, 16, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(strstr(bloomslice_last_error(), "beyond") != NULL);
  bloomslice_index_free(small);
  bits[words - 1] = info.m % 64 ? ((uint64_t)1 << (info.m % 64)) - 1 : ~(uint64_t)0;
  EXPECT(bloomslice_index_add_filter(index, u8("full"), 4, bits, words, &full_id) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_query(index, u8("anything"), 8, ids, SETS + 4, &n) == BLOOMSLICE_STATUS_OK);
  int has_full = 0, has_empty = 0;
  for (size_t x = 0; x < n; x++) {
    has_full |= ids[x] == full_id;
    has_empty |= ids[x] == empty_id;
  }
  EXPECT(has_full && !has_empty);
  /* Sets of caller hashes answer queries by hash. */
  uint64_t hashes[3] = {11, 22, 0xdeadbeefcafef00dULL};
  EXPECT(bloomslice_index_add_set_hashes(index, u8("hashed"), 6, hashes, 3, &hashed_id) == BLOOMSLICE_STATUS_OK);
  int all = 1;
  for (int i = 0; i < 3; i++) {
    int found = 0;
    bloomslice_query_hash(index, hashes[i], ids, SETS + 4, &n);
    for (size_t x = 0; x < n; x++) found |= ids[x] == hashed_id;
    all &= found;
  }
  EXPECT(all);
  uint64_t id = 0;
  EXPECT(bloomslice_index_set_id(index, u8("hashed"), 6, &id) == BLOOMSLICE_STATUS_OK && id == hashed_id);
  /* Keys added to a set of one filter length are found. */
  const uint8_t *extra[1] = {u8("an extra key")};
  size_t extra_len[1] = {12};
  EXPECT(bloomslice_index_add_keys(index, u8("empty"), 5, extra, extra_len, 1) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_query(index, extra[0], extra_len[0], ids, SETS + 4, &n) == BLOOMSLICE_STATUS_OK);
  has_empty = 0;
  for (size_t x = 0; x < n; x++) has_empty |= ids[x] == empty_id;
  EXPECT(has_empty);
  /* Removing sets: their ids no longer answer. */
  EXPECT(bloomslice_index_remove_set(index, u8("full"), 4) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_remove_set(index, u8("empty"), 5) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_remove_set(index, u8("hashed"), 6) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_query(index, u8("anything"), 8, ids, SETS + 4, &n) == BLOOMSLICE_STATUS_OK);
  has_full = 0;
  for (size_t x = 0; x < n; x++) has_full |= ids[x] == full_id;
  EXPECT(!has_full);
  EXPECT(bloomslice_index_info(index, &info) == BLOOMSLICE_STATUS_OK && info.sets == SETS);
  free(bits);
}

typedef struct {
  const BloomsliceIndex *index;
  const answers *expected;
  int ok;
} worker;

static void *query_thread(void *arg) {
  worker *w = arg;
  w->ok = 1;
  for (int round = 0; round < 5; round++) {
    answers a;
    w->ok &= batch(w->index, &a) && same(&a, w->expected);
    free(a.ids);
  }
  return NULL;
}

static void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(data, 1, len, f);
    fclose(f);
  }
}

static void test_files_and_threads(const BloomsliceIndex *index, const char *dir) {
  char path[512], bad[512];
  snprintf(path, sizeof path, "%s/capi_test.bsi", dir);
  snprintf(bad, sizeof bad, "%s/capi_test_bad.bsi", dir);
  EXPECT(bloomslice_index_save(index, path) == BLOOMSLICE_STATUS_OK);
  answers want;
  EXPECT(batch(index, &want));
  BloomsliceIndex *loaded = NULL, *mapped = NULL, *verified = NULL;
  EXPECT(bloomslice_index_load(path, &loaded) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_open_mapped(path, false, &mapped) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_open_mapped(path, true, &verified) == BLOOMSLICE_STATUS_OK);
  const BloomsliceIndex *handles[3] = {loaded, mapped, verified};
  for (int i = 0; i < 3; i++) {
    answers got = {0};
    BloomsliceInfo info;
    EXPECT(handles[i] != NULL && batch(handles[i], &got) && same(&got, &want));
    EXPECT(bloomslice_index_info(handles[i], &info) == BLOOMSLICE_STATUS_OK &&
           info.layout == BLOOMSLICE_LAYOUT_SLICED && info.mapped == (i > 0));
    free(got.ids);
  }
  char name[16];
  size_t len = 0;
  EXPECT(bloomslice_index_set_name(mapped, 7, (uint8_t *)name, sizeof name, &len) == BLOOMSLICE_STATUS_OK);
  EXPECT(len == 5 && memcmp(name, "set07", 5) == 0);
  EXPECT(bloomslice_index_set_name(mapped, 7, (uint8_t *)name, 2, &len) == BLOOMSLICE_STATUS_BUFFER_TOO_SMALL);

  /* Four threads query one mapped handle at once. */
  pthread_t threads[4];
  worker workers[4];
  for (int t = 0; t < 4; t++) {
    workers[t] = (worker){mapped, &want, 0};
    pthread_create(&threads[t], NULL, query_thread, &workers[t]);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(threads[t], NULL);
    EXPECT(workers[t].ok);
  }

  /* Hostile files: errors, never crashes. */
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *bytes = malloc((size_t)size);
  EXPECT(fread(bytes, 1, (size_t)size, f) == (size_t)size);
  fclose(f);
  BloomsliceIndex *out = NULL;
  long cuts[] = {0, 7, 100, size / 2, size - 1};
  for (int c = 0; c < 5; c++) {
    write_file(bad, bytes, (size_t)cuts[c]);
    EXPECT(bloomslice_index_load(bad, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE && out == NULL);
    EXPECT(bloomslice_index_open_mapped(bad, false, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE && out == NULL);
  }
  bytes[size - 9] ^= 0x40; /* a bit in the rows of the last shard */
  write_file(bad, bytes, (size_t)size);
  EXPECT(bloomslice_index_load(bad, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE);
  EXPECT(strstr(bloomslice_last_error(), "checksum") != NULL);
  EXPECT(bloomslice_index_open_mapped(bad, true, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE);
  bytes[size - 9] ^= 0x40;
  bytes[0] ^= 0xff; /* magic */
  write_file(bad, bytes, (size_t)size);
  EXPECT(bloomslice_index_load(bad, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE);
  EXPECT(strstr(bloomslice_last_error(), "magic") != NULL);
  EXPECT(bloomslice_index_load("/nonexistent/dir/x.bsi", &out) == BLOOMSLICE_STATUS_IO);
  EXPECT(bloomslice_index_load(dir, &out) == BLOOMSLICE_STATUS_IO);
  EXPECT(bloomslice_index_save(index, "/nonexistent/dir/x.bsi") == BLOOMSLICE_STATUS_IO);
  EXPECT(out == NULL);
  free(bytes);

  /* Changing a mapped index copies what it touches; the file is intact. */
  EXPECT(bloomslice_index_remove_set(mapped, u8("set03"), 5) == BLOOMSLICE_STATUS_OK);
  answers again = {0};
  EXPECT(batch(verified, &again) && same(&again, &want));
  free(again.ids);
  for (int i = 0; i < 3; i++) bloomslice_index_free((BloomsliceIndex *)handles[i]);
  free(want.ids);
}

/* The index as two shard files (sets 0-9 and 10-19) with a manifest,
 * opened as one read-only index: the same answers, ids and names. */
static void test_sharded(const BloomsliceIndex *index, const char *dir) {
  char whole[512], part[2][512], manifest[512];
  snprintf(whole, sizeof whole, "%s/capi_sharded_whole.bsi", dir);
  snprintf(manifest, sizeof manifest, "%s/capi_sharded.json", dir);
  EXPECT(bloomslice_index_save(index, whole) == BLOOMSLICE_STATUS_OK);
  BloomsliceInfo info;
  EXPECT(bloomslice_index_info(index, &info) == BLOOMSLICE_STATUS_OK);
  FILE *m = fopen(manifest, "w");
  EXPECT(m != NULL);
  if (m == NULL) return;
  /* Sizes and checksums are only compared when opening with verify. */
  fprintf(m,
          "{\"format\": \"bloomslice-manifest\", \"version\": 1,\n"
          " \"params\": {\"m\": %llu, \"k\": %u, \"seed\": %llu, \"scheme\": \"Xxh3Triple\"},\n"
          " \"files\": [",
          (unsigned long long)info.m, info.k, (unsigned long long)info.seed);
  for (int p = 0; p < 2; p++) {
    snprintf(part[p], sizeof part[p], "%s/capi_sharded_%d.bsi", dir, p);
    BloomsliceIndex *copy = NULL;
    EXPECT(bloomslice_index_load(whole, &copy) == BLOOMSLICE_STATUS_OK);
    if (copy == NULL) return;
    fprintf(m, "%s\n  {\"file\": \"capi_sharded_%d.bsi\", \"bytes\": 0, \"xxh3\": \"0000000000000000\", \"sets\": [",
            p ? "," : "", p);
    for (int i = 0; i < SETS; i++) {
      char name[16];
      int n = sprintf(name, "set%02d", i);
      uint64_t id = 0;
      EXPECT(bloomslice_index_set_id(copy, u8(name), (size_t)n, &id) == BLOOMSLICE_STATUS_OK);
      if ((i < SETS / 2) == (p == 0)) {
        fprintf(m, "%s{\"id\": %llu, \"name\": \"%s\"}", i % (SETS / 2) ? ", " : "", (unsigned long long)id, name);
      } else {
        EXPECT(bloomslice_index_remove_set(copy, u8(name), (size_t)n) == BLOOMSLICE_STATUS_OK);
      }
    }
    fprintf(m, "]}");
    EXPECT(bloomslice_index_save(copy, part[p]) == BLOOMSLICE_STATUS_OK);
    bloomslice_index_free(copy);
  }
  fprintf(m, "\n ]}\n");
  fclose(m);

  BloomsliceIndex *loaded = NULL, *mapped = NULL, *out = NULL;
  EXPECT(bloomslice_index_open_manifest(manifest, false, false, &loaded) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_open_manifest(manifest, true, false, &mapped) == BLOOMSLICE_STATUS_OK);
  /* The manifest's sizes and checksums are not those of the files. */
  EXPECT(bloomslice_index_open_manifest(manifest, false, true, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE && out == NULL);
  EXPECT(strstr(bloomslice_last_error(), "does not match the manifest") != NULL);
  EXPECT(bloomslice_index_open_manifest("/nonexistent/manifest.json", false, false, &out) == BLOOMSLICE_STATUS_IO);
  EXPECT(bloomslice_index_open_manifest(whole, true, false, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE && out == NULL);
  EXPECT(bloomslice_index_open_manifest(manifest, false, false, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  if (loaded == NULL || mapped == NULL) return;

  BloomsliceInfo sinfo;
  EXPECT(bloomslice_index_info(mapped, &sinfo) == BLOOMSLICE_STATUS_OK);
  EXPECT(sinfo.layout == BLOOMSLICE_LAYOUT_SHARDED && sinfo.m == info.m && sinfo.k == info.k &&
         sinfo.seed == info.seed && sinfo.sets == SETS && sinfo.shards == 2 && sinfo.mapped &&
         sinfo.memory_bytes > 0);
  EXPECT(bloomslice_index_info(loaded, &sinfo) == BLOOMSLICE_STATUS_OK && !sinfo.mapped);

  /* Batches: the same ids per key as the whole index, as a set. */
  answers want;
  EXPECT(batch(index, &want));
  const BloomsliceIndex *handles[2] = {loaded, mapped};
  size_t cap = (size_t)QUERIES * SETS;
  for (int h = 0; h < 2; h++) {
    answers got = {0};
    got.ids = malloc(cap * sizeof(uint64_t));
    EXPECT(bloomslice_query_batch(handles[h], query_ptrs, query_lens, QUERIES, got.ids, cap, got.offsets,
                                  &got.total) == BLOOMSLICE_STATUS_OK);
    EXPECT(got.total == want.total);
    int agree = 1;
    for (int q = 0; q < QUERIES; q++) {
      size_t n = got.offsets[q + 1] - got.offsets[q];
      agree &= n == want.offsets[q + 1] - want.offsets[q];
      uint64_t ids[SETS];
      size_t n_one = 0;
      EXPECT(bloomslice_query(handles[h], query_ptrs[q], query_lens[q], ids, SETS, &n_one) == BLOOMSLICE_STATUS_OK);
      agree &= n_one == n && memcmp(ids, got.ids + got.offsets[q], n * sizeof(uint64_t)) == 0;
      for (size_t i = 0; i < n && agree; i++) {
        uint64_t id = got.ids[got.offsets[q] + i];
        int found = 0;
        for (size_t j = want.offsets[q]; j < want.offsets[q + 1]; j++) found |= want.ids[j] == id;
        agree &= found;
      }
    }
    EXPECT(agree);
    /* A short buffer: complete offsets and total, BUFFER_TOO_SMALL. */
    size_t total = 0;
    EXPECT(bloomslice_query_batch(handles[h], query_ptrs, query_lens, QUERIES, got.ids, 1, got.offsets, &total) ==
           BLOOMSLICE_STATUS_BUFFER_TOO_SMALL);
    EXPECT(total == want.total);
    free(got.ids);
  }

  /* Names and ids come from both files. */
  char name[16];
  size_t len = 0;
  uint64_t id = 0;
  EXPECT(bloomslice_index_set_id(mapped, u8("set17"), 5, &id) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_set_name(mapped, id, (uint8_t *)name, sizeof name, &len) == BLOOMSLICE_STATUS_OK);
  EXPECT(len == 5 && memcmp(name, "set17", 5) == 0);
  EXPECT(bloomslice_index_set_id(mapped, u8("nope"), 4, &id) == BLOOMSLICE_STATUS_NOT_FOUND);

  /* Scores: a query of 100 keys of set 12 and 50 absent ones. */
  static char skeys[150][32];
  const uint8_t *sptrs[150];
  size_t slens[150];
  for (int j = 0; j < 150; j++) {
    slens[j] = key_of(j < 100 ? 12 : SETS + 1, j, skeys[j]);
    sptrs[j] = u8(skeys[j]);
  }
  uint64_t set12 = 0;
  EXPECT(bloomslice_index_set_id(loaded, u8("set12"), 5, &set12) == BLOOMSLICE_STATUS_OK);
  uint64_t ids[SETS];
  uint32_t counts[SETS];
  size_t n = 0;
  EXPECT(bloomslice_score(loaded, sptrs, slens, 150, ids, counts, SETS, &n) == BLOOMSLICE_STATUS_OK);
  int has12 = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] == set12) has12 = counts[i] >= 100;
    if (i > 0) EXPECT(ids[i - 1] < ids[i]);
  }
  EXPECT(has12);
  EXPECT(bloomslice_query_threshold(mapped, sptrs, slens, 150, 0.6, ids, counts, SETS, &n) ==
         BLOOMSLICE_STATUS_OK);
  EXPECT(n == 1 && ids[0] == set12 && counts[0] >= 100);
  EXPECT(bloomslice_query_threshold(mapped, sptrs, slens, 150, 0.6, ids, counts, 0, &n) ==
         BLOOMSLICE_STATUS_BUFFER_TOO_SMALL);
  EXPECT(n == 1);
  EXPECT(bloomslice_query_threshold(mapped, sptrs, slens, 150, 1.5, ids, counts, SETS, &n) ==
         BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  EXPECT(bloomslice_score(NULL, sptrs, slens, 150, ids, counts, SETS, &n) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);

  /* Read-only: every change is refused with UNSUPPORTED and a message,
   * and the index is unchanged. */
  uint64_t word = 0;
  EXPECT(bloomslice_index_add_set(mapped, u8("new"), 3, sptrs, slens, 10, NULL) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(strstr(bloomslice_last_error(), "read-only") != NULL);
  EXPECT(bloomslice_index_add_set_hashes(loaded, u8("new"), 3, &word, 1, NULL) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(bloomslice_index_add_filter(loaded, u8("new"), 3, &word, 1, NULL) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(bloomslice_index_add_keys(mapped, u8("set12"), 5, sptrs, slens, 10) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(bloomslice_index_remove_set(mapped, u8("set12"), 5) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(bloomslice_index_save(mapped, whole) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(bloomslice_index_info(mapped, &sinfo) == BLOOMSLICE_STATUS_OK && sinfo.sets == SETS);

  bloomslice_index_free(loaded);
  bloomslice_index_free(mapped);
  free(want.ids);
}

/* Scores of an index of one filter length, and indexes of skewed sets
 * sized from their keys: built, queried, scored, grown, saved, loaded,
 * mapped; files of both layouts. */
static void test_scores_and_sets(const BloomsliceIndex *index, const char *dir) {
  /* Threshold scoring of the index: set 3 holds all 100 keys read. */
  static char keys[KEYS_PER_SET][32];
  const uint8_t *ptrs[KEYS_PER_SET];
  size_t lens[KEYS_PER_SET];
  for (int j = 0; j < 100; j++) {
    lens[j] = key_of(3, j, keys[j]);
    ptrs[j] = u8(keys[j]);
  }
  uint64_t ids[SETS];
  uint32_t counts[SETS];
  size_t n = 0;
  EXPECT(bloomslice_query_threshold(index, ptrs, lens, 100, 1.0, ids, counts, SETS, &n) == BLOOMSLICE_STATUS_OK);
  EXPECT(n >= 1 && ids[0] <= 3);
  int found = 0;
  for (size_t i = 0; i < n; i++) found |= ids[i] == 3 && counts[i] == 100;
  EXPECT(found);
  size_t all = 0;
  EXPECT(bloomslice_score(index, ptrs, lens, 100, ids, counts, SETS, &all) == BLOOMSLICE_STATUS_OK);
  EXPECT(all >= n);
  EXPECT(bloomslice_query_threshold(index, ptrs, lens, 100, -0.5, ids, counts, SETS, &n) ==
         BLOOMSLICE_STATUS_INVALID_ARGUMENT);

  /* The index's file opens, mapped, as an index of one filter length
   * answering alike. */
  char path[512], cpath[512];
  snprintf(path, sizeof path, "%s/capi_test.bsi", dir);
  snprintf(cpath, sizeof cpath, "%s/capi_test.bsc", dir);
  answers want = {0}, got = {0};
  EXPECT(batch(index, &want));
  BloomsliceIndex *one = NULL;
  BloomsliceInfo info;
  EXPECT(bloomslice_index_open_mapped(path, true, &one) == BLOOMSLICE_STATUS_OK);
  EXPECT(one != NULL && batch(one, &got) && same(&got, &want));
  EXPECT(bloomslice_index_info(one, &info) == BLOOMSLICE_STATUS_OK && info.layout == BLOOMSLICE_LAYOUT_SLICED);
  free(got.ids);
  free(want.ids);
  bloomslice_index_free(one);

  /* Set i of a skewed collection holds 5 * (i + 1)^2 keys (5 .. 2000). */
  size_t total = 0, ends[SETS];
  for (int i = 0; i < SETS; i++) ends[i] = total += (size_t)(5 * (i + 1) * (i + 1));
  char(*all_keys)[32] = malloc(total * sizeof *all_keys);
  const uint8_t **all_ptrs = malloc(total * sizeof *all_ptrs);
  size_t *all_lens = malloc(total * sizeof *all_lens);
  char names[SETS][16];
  const uint8_t *name_ptrs[SETS];
  size_t name_lens[SETS];
  for (int i = 0, k = 0; i < SETS; i++) {
    name_lens[i] = (size_t)sprintf(names[i], "set%02d", i);
    name_ptrs[i] = u8(names[i]);
    for (; k < (int)ends[i]; k++) {
      all_lens[k] = key_of(i, k, all_keys[k]);
      all_ptrs[k] = u8(all_keys[k]);
    }
  }
  BloomsliceIndex *c = NULL;
  EXPECT(bloomslice_index_build(0.01, 42, name_ptrs, name_lens, SETS, all_ptrs, all_lens, ends, &c) ==
         BLOOMSLICE_STATUS_OK);
  if (c == NULL) return;
  EXPECT(bloomslice_index_info(c, &info) == BLOOMSLICE_STATUS_OK);
  EXPECT(info.layout == BLOOMSLICE_LAYOUT_SETS && info.sets == SETS && info.parts >= 2 && info.seed == 42 &&
         info.fp == 0.01 && info.m == 0 && info.grown_sets == 0);
  int missing = 0;
  for (int i = 0, k = 0; i < SETS; i++) {
    for (; k < (int)ends[i]; k++) {
      if (bloomslice_query(c, all_ptrs[k], all_lens[k], ids, SETS, &n) != BLOOMSLICE_STATUS_OK) {
        missing++;
        continue;
      }
      int has = 0;
      for (size_t j = 0; j < n; j++) has |= ids[j] == (uint64_t)i;
      missing += !has;
    }
  }
  EXPECT(missing == 0);
  /* The largest set holds every key of its own read. */
  EXPECT(bloomslice_query_threshold(c, all_ptrs + ends[SETS - 2], all_lens + ends[SETS - 2], 500, 0.9, ids, counts,
                                    SETS, &n) == BLOOMSLICE_STATUS_OK);
  found = 0;
  for (size_t i = 0; i < n; i++) found |= ids[i] == SETS - 1 && counts[i] == 500;
  EXPECT(found);
  /* Growing the smallest set past its capacity keeps every key. */
  EXPECT(bloomslice_index_add_keys(c, u8("set00"), 5, all_ptrs + ends[SETS - 2], all_lens + ends[SETS - 2], 1000) ==
         BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_info(c, &info) == BLOOMSLICE_STATUS_OK && info.grown_sets == 1);
  EXPECT(bloomslice_query(c, all_ptrs[ends[SETS - 2] + 999], all_lens[ends[SETS - 2] + 999], ids, SETS, &n) ==
         BLOOMSLICE_STATUS_OK);
  found = 0;
  for (size_t i = 0; i < n; i++) found |= ids[i] == 0;
  EXPECT(found);
  /* A ready filter needs an index of one filter length. */
  uint64_t words[2] = {0, 0};
  EXPECT(bloomslice_index_add_filter(c, u8("ready"), 5, words, 2, NULL) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(strstr(bloomslice_last_error(), "one filter length") != NULL);
  /* Saved, loaded and mapped: the same layout and answers. */
  EXPECT(bloomslice_index_save(c, cpath) == BLOOMSLICE_STATUS_OK);
  EXPECT(batch(c, &want));
  BloomsliceIndex *loaded = NULL, *mapped = NULL;
  EXPECT(bloomslice_index_load(cpath, &loaded) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_open_mapped(cpath, false, &mapped) == BLOOMSLICE_STATUS_OK);
  const BloomsliceIndex *handles[2] = {loaded, mapped};
  for (int i = 0; i < 2; i++) {
    answers again = {0};
    EXPECT(handles[i] != NULL && batch(handles[i], &again) && same(&again, &want));
    EXPECT(bloomslice_index_info(handles[i], &info) == BLOOMSLICE_STATUS_OK && info.layout == BLOOMSLICE_LAYOUT_SETS &&
           info.grown_sets == 1 && info.mapped == (i == 1));
    free(again.ids);
  }
  EXPECT(bloomslice_index_remove_set(c, u8("set05"), 5) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_remove_set(c, u8("set05"), 5) == BLOOMSLICE_STATUS_NOT_FOUND);
  EXPECT(bloomslice_index_load(path, NULL) == BLOOMSLICE_STATUS_INVALID_ARGUMENT);
  free(want.ids);
  free(all_keys);
  free(all_ptrs);
  free(all_lens);
  bloomslice_index_free(loaded);
  bloomslice_index_free(mapped);
  bloomslice_index_free(c);
  remove(cpath);
}

/* A level index file written by the CLI (`bloomslice build --levels`, the
 * binary BLOOMSLICE_CLI names, else target/debug/bloomslice): loaded and
 * mapped, every read answers as the CLI's own `query` of the file (the
 * Rust LevelIndex), with no false negatives; sets added, grown and
 * removed answer so (names in step, the statuses of a set index), a ready
 * filter is refused with UNSUPPORTED; a save writes a level file with the
 * writes, which answers alike. */
#define LSETS 300
#define LABSENT 2000

static size_t level_set_size(int i) { return i % 30 == 0 ? 2000 : 1 + (size_t)(i * 7) % 20; }

static size_t level_key(int i, int j, char *buf) { return (size_t)sprintf(buf, "l%d-k%d", i, j); }

static int by_string(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of `ids` (from `index`), sorted and joined by ',' into `out`
 * (as the CLI prints them). */
static int joined_names(const BloomsliceIndex *index, const uint64_t *ids, size_t n, char *out, size_t cap) {
  static char names[LSETS][16];
  char *sorted[LSETS];
  if (n > LSETS) return 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    if (bloomslice_index_set_name(index, ids[i], (uint8_t *)names[i], sizeof names[i] - 1, &len) !=
        BLOOMSLICE_STATUS_OK)
      return 0;
    names[i][len] = '\0';
    sorted[i] = names[i];
  }
  qsort(sorted, n, sizeof sorted[0], by_string);
  out[0] = '\0';
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    int w = snprintf(out + used, cap - used, "%s%s", i ? "," : "", sorted[i]);
    if (w < 0 || (size_t)w >= cap - used) return 0;
    used += (size_t)w;
  }
  return 1;
}

static void test_levels(const char *dir) {
  const char *cli = getenv("BLOOMSLICE_CLI");
  if (cli == NULL || *cli == '\0') {
    FILE *f = fopen("target/debug/bloomslice", "rb");
    if (f == NULL) {
      printf("capi_test: level index files skipped (BLOOMSLICE_CLI unset and no target/debug/bloomslice)\n");
      return;
    }
    fclose(f);
    cli = "target/debug/bloomslice";
  }
  char sets_dir[512], path[1024], keys_path[512], answers_path[512], copy[512], cmd[4096];
  snprintf(sets_dir, sizeof sets_dir, "%s/capi_levels_sets", dir);
  snprintf(path, sizeof path, "%s/capi_levels.bsl", dir);
  snprintf(keys_path, sizeof keys_path, "%s/capi_levels_keys.txt", dir);
  snprintf(answers_path, sizeof answers_path, "%s/capi_levels_answers.txt", dir);
  snprintf(copy, sizeof copy, "%s/capi_levels_copy.bsl", dir);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", sets_dir, sets_dir);
  EXPECT(system(cmd) == 0);

  /* One file per set (heavy-tailed sizes), and the query keys: every
   * third key of every set, then absent ones. */
  size_t n_keys = 0;
  for (int i = 0; i < LSETS; i++) n_keys += (level_set_size(i) + 2) / 3;
  n_keys += LABSENT;
  char(*keys)[24] = malloc(n_keys * sizeof *keys);
  const uint8_t **ptrs = malloc(n_keys * sizeof *ptrs);
  size_t *lens = malloc(n_keys * sizeof *lens);
  int *owner = malloc(n_keys * sizeof *owner);
  FILE *kf = fopen(keys_path, "w");
  EXPECT(kf != NULL);
  if (kf == NULL) return;
  size_t q = 0;
  char key[24];
  for (int i = 0; i < LSETS; i++) {
    snprintf(path, sizeof path, "%s/lset%03d", sets_dir, i);
    FILE *sf = fopen(path, "w");
    EXPECT(sf != NULL);
    if (sf == NULL) return;
    for (int j = 0; j < (int)level_set_size(i); j++) {
      level_key(i, j, key);
      fprintf(sf, "%s\n", key);
      if (j % 3 == 0) {
        owner[q] = i;
        lens[q] = level_key(i, j, keys[q]);
        q++;
      }
    }
    fclose(sf);
  }
  for (int j = 0; j < LABSENT; j++, q++) {
    owner[q] = -1;
    lens[q] = (size_t)sprintf(keys[q], "absent-%d", j);
  }
  for (q = 0; q < n_keys; q++) {
    ptrs[q] = u8(keys[q]);
    fprintf(kf, "%s\n", keys[q]);
  }
  fclose(kf);
  snprintf(path, sizeof path, "%s/capi_levels.bsl", dir);
  snprintf(cmd, sizeof cmd, "'%s' build '%s' --dir '%s' --levels >/dev/null && '%s' query '%s' <'%s' >'%s'", cli,
           path, sets_dir, cli, path, keys_path, answers_path);
  EXPECT(system(cmd) == 0);

  BloomsliceIndex *loaded = NULL, *mapped = NULL, *again = NULL, *out = NULL;
  EXPECT(bloomslice_index_load(path, &loaded) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_open_mapped(path, false, &mapped) == BLOOMSLICE_STATUS_OK);
  FILE *af = fopen(answers_path, "r");
  EXPECT(af != NULL);
  if (loaded == NULL || mapped == NULL || af == NULL) return;
  BloomsliceInfo info;
  for (int h = 0; h < 2; h++) {
    EXPECT(bloomslice_index_info(h ? mapped : loaded, &info) == BLOOMSLICE_STATUS_OK);
    EXPECT(info.layout == BLOOMSLICE_LAYOUT_LEVELS && info.sets == LSETS && info.fp == 0.01 && info.k >= 1 &&
           !info.mapped && info.memory_bytes > 0 && info.m == 0 && info.shards == 0);
  }

  /* Key by key: the CLI's answer, single and batched, loaded and mapped,
   * by bytes and by hash; no false negative. */
  size_t cap = n_keys * 8;
  uint64_t *bids[2], *hids = malloc(cap * sizeof(uint64_t)), *hashes = malloc(n_keys * sizeof(uint64_t));
  size_t *boffsets[2], *hoffsets = malloc((n_keys + 1) * sizeof(size_t)), btotal[2] = {0, 0}, htotal = 0;
  const BloomsliceIndex *handles[2] = {loaded, mapped};
  for (int h = 0; h < 2; h++) {
    bids[h] = malloc(cap * sizeof(uint64_t));
    boffsets[h] = malloc((n_keys + 1) * sizeof(size_t));
    EXPECT(bloomslice_query_batch(handles[h], ptrs, lens, n_keys, bids[h], cap, boffsets[h], &btotal[h]) ==
           BLOOMSLICE_STATUS_OK);
  }
  int hashed = 1;
  for (q = 0; q < n_keys; q++)
    hashed &= bloomslice_hash_key(mapped, ptrs[q], lens[q], &hashes[q]) == BLOOMSLICE_STATUS_OK;
  EXPECT(hashed);
  EXPECT(bloomslice_query_batch_hashes(loaded, hashes, n_keys, hids, cap, hoffsets, &htotal) == BLOOMSLICE_STATUS_OK);
  EXPECT(htotal == btotal[0] && btotal[0] == btotal[1]);
  int cli_agrees = 1, batch_agrees = 1, missing = 0, lines = 0;
  char line[8192], want[8192], got[8192];
  for (q = 0; q < n_keys && fgets(line, sizeof line, af) != NULL; q++, lines++) {
    line[strcspn(line, "\n")] = '\0';
    char *tab = strchr(line, '\t');
    cli_agrees &= tab != NULL && (size_t)(tab - line) == lens[q] && memcmp(line, keys[q], lens[q]) == 0;
    snprintf(want, sizeof want, "%s", tab ? tab + 1 : "");
    uint64_t ids[LSETS];
    size_t n = 0;
    EXPECT(bloomslice_query(loaded, ptrs[q], lens[q], ids, LSETS, &n) == BLOOMSLICE_STATUS_OK);
    cli_agrees &= joined_names(loaded, ids, n, got, sizeof got) && strcmp(got, want) == 0;
    for (int h = 0; h < 2; h++)
      batch_agrees &= boffsets[h][q + 1] - boffsets[h][q] == n &&
                      memcmp(bids[h] + boffsets[h][q], ids, n * sizeof(uint64_t)) == 0;
    batch_agrees &= hoffsets[q + 1] - hoffsets[q] == n && memcmp(hids + hoffsets[q], ids, n * sizeof(uint64_t)) == 0;
    size_t m = 0;
    EXPECT(bloomslice_query_hash(mapped, hashes[q], ids, LSETS, &m) == BLOOMSLICE_STATUS_OK);
    batch_agrees &= m == n;
    if (owner[q] >= 0) {
      char name[16];
      uint64_t id = 0;
      int nl = sprintf(name, "lset%03d", owner[q]), has = 0;
      EXPECT(bloomslice_index_set_id(mapped, u8(name), (size_t)nl, &id) == BLOOMSLICE_STATUS_OK);
      for (size_t x = 0; x < m; x++) has |= ids[x] == id;
      missing += !has;
    }
  }
  EXPECT(lines == (int)n_keys);
  EXPECT(cli_agrees);
  EXPECT(batch_agrees);
  EXPECT(missing == 0);
  fclose(af);

  /* Scores: the first (largest) set's own keys reach every threshold. */
  uint64_t id0 = 0, sids[LSETS];
  uint32_t counts[LSETS];
  size_t n = 0, own = (level_set_size(0) + 2) / 3;
  EXPECT(bloomslice_index_set_id(loaded, u8("lset000"), 7, &id0) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_query_threshold(mapped, ptrs, lens, own, 1.0, sids, counts, LSETS, &n) == BLOOMSLICE_STATUS_OK);
  int found = 0;
  for (size_t i = 0; i < n; i++) found |= sids[i] == id0 && counts[i] == own;
  EXPECT(found);
  size_t all = 0;
  EXPECT(bloomslice_score(loaded, ptrs, lens, own, sids, counts, LSETS, &all) == BLOOMSLICE_STATUS_OK);
  EXPECT(all >= n);

  /* Writes go beside the levels, the names in step, with the statuses of
   * a set index; `loaded` stays as built. */
  char nkeys[40][24];
  const uint8_t *nptrs[40];
  size_t nlens[40];
  for (int j = 0; j < 40; j++) {
    nlens[j] = (size_t)sprintf(nkeys[j], j < 20 ? "new-%d" : "grown-%d", j);
    nptrs[j] = u8(nkeys[j]);
  }
  uint64_t new_id = 0, hashed_id = 0, id1 = 0, word = 12345;
  EXPECT(bloomslice_index_set_id(loaded, u8("lset001"), 7, &id1) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_add_set(mapped, u8("new"), 3, nptrs, nlens, 10, &new_id) == BLOOMSLICE_STATUS_OK);
  EXPECT(new_id == LSETS);
  EXPECT(bloomslice_index_add_set(mapped, u8("new"), 3, nptrs, nlens, 10, NULL) == BLOOMSLICE_STATUS_ALREADY_EXISTS);
  EXPECT(bloomslice_index_add_keys(mapped, u8("new"), 3, nptrs + 10, nlens + 10, 10) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_add_keys(mapped, u8("lset001"), 7, nptrs + 20, nlens + 20, 20) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_add_keys(mapped, u8("nosuch"), 6, nptrs, nlens, 1) == BLOOMSLICE_STATUS_NOT_FOUND);
  EXPECT(bloomslice_index_remove_set(mapped, u8("lset000"), 7) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_remove_set(mapped, u8("lset000"), 7) == BLOOMSLICE_STATUS_NOT_FOUND);
  EXPECT(bloomslice_index_add_set_hashes(mapped, u8("hashed"), 6, &word, 1, &hashed_id) == BLOOMSLICE_STATUS_OK);
  EXPECT(hashed_id == LSETS + 1);
  /* A ready filter is refused, with a message that says why. */
  EXPECT(bloomslice_index_add_filter(mapped, u8("ready"), 5, &word, 1, NULL) == BLOOMSLICE_STATUS_UNSUPPORTED);
  EXPECT(strstr(bloomslice_last_error(), "level index") != NULL);
  EXPECT(bloomslice_index_info(mapped, &info) == BLOOMSLICE_STATUS_OK && info.sets == LSETS + 1);
  EXPECT(bloomslice_index_info(loaded, &info) == BLOOMSLICE_STATUS_OK && info.sets == LSETS);

  /* The new keys answer with their sets, the removed set answers no
   * more, and every other answer of the build is still there. */
  int written_ok = 1;
  for (int j = 0; j < 40; j++) {
    uint64_t ids[LSETS + 2];
    size_t m = 0, has = 0;
    EXPECT(bloomslice_query(mapped, nptrs[j], nlens[j], ids, LSETS + 2, &m) == BLOOMSLICE_STATUS_OK);
    for (size_t x = 0; x < m; x++) has |= ids[x] == (j < 20 ? new_id : id1);
    written_ok &= has != 0;
  }
  uint64_t hids1[LSETS + 2];
  size_t hn = 0;
  EXPECT(bloomslice_query_hash(mapped, word, hids1, LSETS + 2, &hn) == BLOOMSLICE_STATUS_OK);
  int hashed_found = 0;
  for (size_t x = 0; x < hn; x++) hashed_found |= hids1[x] == hashed_id;
  EXPECT(hashed_found);
  size_t mtotal = 0;
  EXPECT(bloomslice_query_batch(mapped, ptrs, lens, n_keys, bids[1], cap, boffsets[1], &mtotal) ==
         BLOOMSLICE_STATUS_OK);
  for (q = 0; q < n_keys; q++) {
    const uint64_t *was = bids[0] + boffsets[0][q], *now = bids[1] + boffsets[1][q];
    size_t n_was = boffsets[0][q + 1] - boffsets[0][q], n_now = boffsets[1][q + 1] - boffsets[1][q];
    for (size_t x = 0; x < n_now; x++) written_ok &= now[x] != id0;
    for (size_t x = 0; x < n_was; x++) {
      int kept = was[x] == id0;
      for (size_t y = 0; y < n_now; y++) kept |= now[y] == was[x];
      written_ok &= kept;
    }
  }
  EXPECT(written_ok);

  /* Saved with its writes and loaded again: the same answers and names. */
  EXPECT(bloomslice_index_save(mapped, copy) == BLOOMSLICE_STATUS_OK);
  EXPECT(bloomslice_index_load(copy, &again) == BLOOMSLICE_STATUS_OK);
  if (again != NULL) {
    size_t total = 0;
    uint64_t id = 0;
    EXPECT(bloomslice_index_info(again, &info) == BLOOMSLICE_STATUS_OK && info.layout == BLOOMSLICE_LAYOUT_LEVELS &&
           info.sets == LSETS + 1);
    EXPECT(bloomslice_query_batch(again, ptrs, lens, n_keys, hids, cap, hoffsets, &total) == BLOOMSLICE_STATUS_OK);
    EXPECT(total == mtotal && memcmp(hoffsets, boffsets[1], (n_keys + 1) * sizeof(size_t)) == 0 &&
           memcmp(hids, bids[1], total * sizeof(uint64_t)) == 0);
    EXPECT(bloomslice_index_set_id(again, u8("new"), 3, &id) == BLOOMSLICE_STATUS_OK && id == new_id);
    EXPECT(bloomslice_index_set_id(again, u8("lset000"), 7, &id) == BLOOMSLICE_STATUS_NOT_FOUND);
    EXPECT(bloomslice_query_hash(again, word, hids1, LSETS + 2, &hn) == BLOOMSLICE_STATUS_OK);
    hashed_found = 0;
    for (size_t x = 0; x < hn; x++) hashed_found |= hids1[x] == hashed_id;
    EXPECT(hashed_found);
  }
  /* A truncated level file is a corrupt file, not a crash. */
  FILE *lf = fopen(path, "rb");
  if (lf != NULL) {
    char head[64];
    size_t got_bytes = fread(head, 1, sizeof head, lf);
    fclose(lf);
    write_file(copy, head, got_bytes);
    EXPECT(bloomslice_index_load(copy, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE && out == NULL);
    EXPECT(bloomslice_index_open_mapped(copy, true, &out) == BLOOMSLICE_STATUS_CORRUPT_FILE && out == NULL);
  }

  for (int h = 0; h < 2; h++) {
    free(bids[h]);
    free(boffsets[h]);
  }
  free(hids);
  free(hoffsets);
  free(hashes);
  free(keys);
  free(ptrs);
  free(lens);
  free(owner);
  bloomslice_index_free(loaded);
  bloomslice_index_free(mapped);
  bloomslice_index_free(again);
  remove(path);
  remove(copy);
  remove(keys_path);
  remove(answers_path);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", sets_dir);
  EXPECT(system(cmd) == 0);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  EXPECT(strcmp(bloomslice_version(), "0.1.0") == 0);
  EXPECT(strcmp(bloomslice_last_error(), "") == 0);
  make_queries();
  BloomsliceIndex *index = build();
  EXPECT(index != NULL);
  if (index == NULL) return 1;
  test_no_false_negatives_and_batch_equals_single(index);
  test_bad_arguments(index);
  test_filters_and_hashes(index);
  test_files_and_threads(index, dir);
  test_sharded(index, dir);
  test_scores_and_sets(index, dir);
  test_levels(dir);
  bloomslice_index_free(index);
  printf("capi_test: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
