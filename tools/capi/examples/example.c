/* Build an index of sets of very different sizes, each sized from its own
 * keys: query it, name the sets, score a query of many keys, save it and map
 * it back. Then an index whose filters all have one length, set by set,
 * saved and loaded back. The files go to the path given as argument (and
 * that path with ".1" appended), else to $TMPDIR (or /tmp), and are removed
 * at the end. */
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

#define KEYS(array) ((const uint8_t *const *)(array))

int main(int argc, char **argv) {
  char path[4096], path1[4100];
  const char *tmp = getenv("TMPDIR");
  if (argc > 1)
    snprintf(path, sizeof path, "%s", argv[1]);
  else
    snprintf(path, sizeof path, "%s/bloomslice-example.bsc", tmp && *tmp ? tmp : "/tmp");
  snprintf(path1, sizeof path1, "%s.1", path);

  /* Two sets at 1% false positives: "fruit" holds 3 keys, "large" 5 000
   * ("k0" .. "k4999"); each set's filter is sized for its own keys. */
  enum { LARGE = 5000 };
  static char large_keys[LARGE][8];
  static const uint8_t *keys[LARGE + 3];
  static size_t lens[LARGE + 3];
  const char *fruit[] = {"apple", "pear", "plum"};
  for (size_t i = 0; i < 3; i++) keys[i] = (const uint8_t *)fruit[i], lens[i] = strlen(fruit[i]);
  for (size_t i = 0; i < LARGE; i++) {
    lens[i + 3] = (size_t)snprintf(large_keys[i], sizeof large_keys[i], "k%zu", i);
    keys[i + 3] = (const uint8_t *)large_keys[i];
  }
  const char *set_names[] = {"fruit", "large"};
  size_t name_lens[] = {5, 5}, set_ends[] = {3, LARGE + 3};
  BloomsliceIndex *index = NULL;
  CHECK(bloomslice_index_build(0.01, 0, KEYS(set_names), name_lens, 2, keys, lens, set_ends, &index));
  BloomsliceInfo info;
  CHECK(bloomslice_index_info(index, &info));
  printf("%llu sets in %llu parts\n", (unsigned long long)info.sets, (unsigned long long)info.parts);

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

  /* A batch: ids of key i are batch_ids[offsets[i] .. offsets[i + 1]]. */
  const char *batch[] = {"apple", "k42", "granite"};
  size_t batch_lens[] = {5, 3, 7}, offsets[4], total = 0;
  uint64_t batch_ids[6];
  CHECK(bloomslice_query_batch(index, KEYS(batch), batch_lens, 3, batch_ids, 6, offsets, &total));
  for (size_t i = 0; i < 3; i++)
    printf("%s: %zu sets\n", batch[i], offsets[i + 1] - offsets[i]);

  /* Score one query of many keys: the sets that may hold 90% of them. */
  uint64_t hit_ids[2];
  uint32_t hit_counts[2];
  CHECK(bloomslice_query_threshold(index, keys + 3, lens + 3, 1000, 0.9, hit_ids, hit_counts, 2, &n));
  for (size_t i = 0; i < n; i++)
    printf("set %llu holds %u of 1000 keys\n", (unsigned long long)hit_ids[i], hit_counts[i]);

  /* Save atomically, then map the file and query it in place. */
  CHECK(bloomslice_index_save(index, path));
  BloomsliceIndex *mapped = NULL;
  CHECK(bloomslice_index_open_mapped(path, false, &mapped));
  CHECK(bloomslice_query(mapped, (const uint8_t *)"k77", 3, ids, 2, &n));
  printf("k77: %zu set(s) in the mapped file\n", n);
  bloomslice_index_free(mapped);
  bloomslice_index_free(index);

  /* Every filter of one length instead, sized for 10 000 keys per set at 1%
   * false positives (m = 100 992, k = 7), set by set; the same functions
   * query it. */
  BloomsliceIndex *sliced = NULL;
  CHECK(bloomslice_index_new_sliced_for_capacity(10000, 0.01, 0, &sliced));
  const char *trees[] = {"oak", "pear", "birch"};
  size_t tree_lens[] = {3, 4, 5};
  CHECK(bloomslice_index_add_set(sliced, (const uint8_t *)"fruit", 5, keys, lens, 3, NULL));
  CHECK(bloomslice_index_add_set(sliced, (const uint8_t *)"trees", 5, KEYS(trees), tree_lens, 3, NULL));
  CHECK(bloomslice_query(sliced, (const uint8_t *)"pear", 4, ids, 2, &n));
  printf("pear: %zu set(s) of one filter length\n", n);

  /* A file opens as the layout it was saved from. */
  CHECK(bloomslice_index_save(sliced, path1));
  BloomsliceIndex *loaded = NULL;
  CHECK(bloomslice_index_load(path1, &loaded));
  CHECK(bloomslice_index_info(loaded, &info));
  printf("loaded: %s, m = %llu, k = %u\n", info.layout == BLOOMSLICE_LAYOUT_SLICED ? "one filter length" : "sets",
         (unsigned long long)info.m, info.k);
  bloomslice_index_free(loaded);
  bloomslice_index_free(sliced);
  if (argc <= 1) {
    remove(path);
    remove(path1);
  }
  return 0;
}
