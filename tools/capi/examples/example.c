/* Build an index of two sets, query it, save it and map it back; then a
 * collection of sets of very different sizes, each sized from its own keys:
 * query it, score a query of many keys, save it and map it back. The files
 * go to the path given as argument (and that path with ".c" appended),
 * else to $TMPDIR (or /tmp), and are removed at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bloomslice.h"

#define CHECK(call)                                                          \
  do {                                                                       \
    if ((call) != BLOOMSLICE_STATUS_OK) {                                    \
      fprintf(stderr, "%s failed: %s\n", #call, bloomslice_last_error());    \
      return 1;                                                              \
    }                                                                        \
  } while (0)

static int add(BloomsliceIndex *index, const char *name, const char **keys, size_t n) {
  size_t lens[8];
  for (size_t i = 0; i < n; i++) lens[i] = strlen(keys[i]);
  CHECK(bloomslice_index_add_set(index, (const uint8_t *)name, strlen(name),
                                 (const uint8_t *const *)keys, lens, n, NULL));
  return 0;
}

int main(int argc, char **argv) {
  char path[4096];
  const char *tmp = getenv("TMPDIR");
  if (argc > 1)
    snprintf(path, sizeof path, "%s", argv[1]);
  else
    snprintf(path, sizeof path, "%s/bloomslice-example-fruit.bsi", tmp && *tmp ? tmp : "/tmp");
  BloomsliceIndex *index = NULL;
  /* 10 000 keys per set at 1% false positives: m = 100 992, k = 7. */
  CHECK(bloomslice_index_new_for_capacity(10000, 0.01, 0, &index));
  const char *fruit[] = {"apple", "pear", "plum"};
  const char *trees[] = {"oak", "pear", "birch"};
  if (add(index, "fruit", fruit, 3) || add(index, "trees", trees, 3)) return 1;

  /* One key: the ids of the sets that may hold it, then their names. */
  uint64_t ids[2];
  size_t n = 0;
  CHECK(bloomslice_query(index, (const uint8_t *)"pear", 4, ids, 2, &n));
  for (size_t i = 0; i < n; i++) {
    char name[64];
    size_t len = 0;
    CHECK(bloomslice_index_set_name(index, ids[i], (uint8_t *)name, sizeof name, &len));
    printf("pear may be in %.*s\n", (int)len, name);
  }

  /* A batch: ids of key i are ids[offsets[i] .. offsets[i + 1]]. */
  const char *keys[] = {"apple", "oak", "granite"};
  size_t key_lens[] = {5, 3, 7}, offsets[4], total = 0;
  uint64_t batch_ids[6];
  CHECK(bloomslice_query_batch(index, (const uint8_t *const *)keys, key_lens, 3,
                               batch_ids, 6, offsets, &total));
  for (size_t i = 0; i < 3; i++)
    printf("%s: %zu sets\n", keys[i], offsets[i + 1] - offsets[i]);

  /* Save atomically, then map the file and query it in place. */
  CHECK(bloomslice_index_save(index, path));
  BloomsliceIndex *mapped = NULL;
  CHECK(bloomslice_index_open_mapped(path, false, &mapped));
  CHECK(bloomslice_query(mapped, (const uint8_t *)"oak", 3, ids, 2, &n));
  printf("oak: %zu set(s) in the mapped file\n", n);
  bloomslice_index_free(mapped);
  bloomslice_index_free(index);

  /* A collection at 1% false positives: "tiny" holds 2 keys, "large"
   * 5 000 ("k0" .. "k4999"); each set's filter is sized for its own keys. */
  enum { LARGE = 5000 };
  static char large_keys[LARGE][8];
  static const uint8_t *keys_all[LARGE + 2];
  static size_t lens_all[LARGE + 2];
  const char *tiny[] = {"apple", "pear"};
  for (size_t i = 0; i < 2; i++) keys_all[i] = (const uint8_t *)tiny[i], lens_all[i] = strlen(tiny[i]);
  for (size_t i = 0; i < LARGE; i++) {
    lens_all[i + 2] = (size_t)snprintf(large_keys[i], sizeof large_keys[i], "k%zu", i);
    keys_all[i + 2] = (const uint8_t *)large_keys[i];
  }
  const char *set_names[] = {"tiny", "large"};
  size_t name_lens[] = {4, 5}, set_ends[] = {2, LARGE + 2};
  BloomsliceCollection *collection = NULL;
  CHECK(bloomslice_collection_build(0.01, 0, (const uint8_t *const *)set_names, name_lens, 2,
                                    keys_all, lens_all, set_ends, &collection));
  BloomsliceCollectionInfo info;
  CHECK(bloomslice_collection_info(collection, &info));
  printf("collection: %llu sets in %llu parts\n", (unsigned long long)info.sets,
         (unsigned long long)info.parts);
  CHECK(bloomslice_collection_query(collection, (const uint8_t *)"pear", 4, ids, 2, &n));
  printf("pear: %zu set(s)\n", n);

  /* Score one query of many keys: the sets that may hold 90% of them. */
  uint64_t hit_ids[2];
  uint32_t hit_counts[2];
  CHECK(bloomslice_collection_query_threshold(collection, keys_all + 2, lens_all + 2, 1000, 0.9,
                                              hit_ids, hit_counts, 2, &n));
  for (size_t i = 0; i < n; i++) printf("set %llu holds %u of 1000 keys\n",
                                        (unsigned long long)hit_ids[i], hit_counts[i]);

  /* Save as a collection file and map it back. */
  char cpath[4100];
  snprintf(cpath, sizeof cpath, "%s.c", path);
  CHECK(bloomslice_collection_save(collection, cpath));
  BloomsliceCollection *cmapped = NULL;
  CHECK(bloomslice_collection_open_mapped(cpath, false, &cmapped));
  CHECK(bloomslice_collection_query(cmapped, (const uint8_t *)"k77", 3, ids, 2, &n));
  printf("k77: %zu set(s) in the mapped collection\n", n);
  bloomslice_collection_free(cmapped);
  bloomslice_collection_free(collection);
  if (argc <= 1) {
    remove(path);
    remove(cpath);
  }
  return 0;
}
