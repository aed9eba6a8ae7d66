/* Build an index of two sets, query it, save it and map it back. The file
 * goes to the path given as argument, else to $TMPDIR (or /tmp), and is
 * removed at the end. */
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
  if (argc <= 1) remove(path);
  return 0;
}
