#define _POSIX_C_SOURCE 199309L
/* The C side of the C ABI speed comparison: maps DIR/full.bsi, reads the
 * caller hashes DIR/queries.u64 (both written by the `capi-bench` example)
 * and times bloomslice_query_batch_hashes on them in batches of 1024 keys
 * (as the Rust side does) with reused buffers sized for the worst case
 * (every set matching every key), best of REPEAT passes. Prints
 * `c_ns_per_key <ns> matches <total>`. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "bloomslice.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: capi_bench DIR [REPEAT]\n");
    return 2;
  }
  int repeat = argc > 2 ? atoi(argv[2]) : 7;
  char path[4096];
  snprintf(path, sizeof path, "%s/full.bsi", argv[1]);
  BloomsliceIndex *index = NULL;
  if (bloomslice_index_load(path, &index) != BLOOMSLICE_STATUS_OK) {
    fprintf(stderr, "%s: %s\n", path, bloomslice_last_error());
    return 1;
  }
  snprintf(path, sizeof path, "%s/queries.u64", argv[1]);
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  size_t n = (size_t)ftell(f) / 8;
  fseek(f, 0, SEEK_SET);
  uint64_t *hashes = malloc(n * 8);
  if (fread(hashes, 8, n, f) != n) return 1;
  fclose(f);
  BloomsliceInfo info;
  bloomslice_index_info(index, &info);
  enum { BATCH = 1024 };
  size_t cap = BATCH * (size_t)info.sets, total = 0, first = 0;
  uint64_t *ids = malloc(cap * sizeof(uint64_t));
  size_t *offsets = malloc((BATCH + 1) * sizeof(size_t));
  double best = 1e30;
  for (int r = 0; r < repeat; r++) {
    double start = now();
    total = 0;
    for (size_t i = 0; i < n; i += BATCH) {
      size_t len = n - i < BATCH ? n - i : BATCH, got = 0;
      if (bloomslice_query_batch_hashes(index, hashes + i, len, ids, cap, offsets, &got) != BLOOMSLICE_STATUS_OK) {
        fprintf(stderr, "query_batch_hashes: %s\n", bloomslice_last_error());
        return 1;
      }
      total += got;
    }
    double took = now() - start;
    if (r == 0) first = total;
    if (total != first) return 1; /* answers must not change between passes */
    if (took < best) best = took;
  }
  printf("c_ns_per_key %.2f matches %zu\n", best * 1e9 / (double)n, total);
  free(ids);
  free(offsets);
  free(hashes);
  bloomslice_index_free(index);
  return 0;
}
