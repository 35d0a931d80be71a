/* Read bandwidth of main memory with 1..N threads: the ceiling for a decode step that must read
   every weight once. Each thread sums its own slice of a buffer far larger than the last-level
   cache; the sum is printed so the compiler cannot drop the loads. Built and run by
   bench/memory-bandwidth.ts (cc -O3 -march=native). Usage: memory-bandwidth THREADS MIB */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t *buffer;
static size_t wordsPerThread;
static int passes = 8;

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *readSlice(void *arg) {
  const uint64_t *p = buffer + (size_t)(intptr_t)arg * wordsPerThread;
  /* One plain reduction: at -O3 the compiler turns it into the widest vector loads the CPU has. */
  uint64_t sum = 0;
  for (int pass = 0; pass < passes; pass++) {
    for (size_t i = 0; i < wordsPerThread; i++) sum += p[i];
  }
  return (void *)(intptr_t)sum;
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: %s THREADS MIB\n", argv[0]); return 2; }
  int threads = atoi(argv[1]);
  size_t bytes = (size_t)atoi(argv[2]) << 20;
  if (threads < 1 || threads > 256 || bytes == 0) { fprintf(stderr, "bad arguments\n"); return 2; }
  wordsPerThread = bytes / sizeof(uint64_t) / threads / 4 * 4;
  if (posix_memalign((void **)&buffer, 4096, wordsPerThread * threads * sizeof(uint64_t)) != 0) return 1;
  memset(buffer, 1, wordsPerThread * threads * sizeof(uint64_t));
  pthread_t ids[256];
  double best = 0;
  uintptr_t check = 0;
  for (int round = 0; round < 3; round++) {
    double start = seconds();
    for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, readSlice, (void *)(intptr_t)t);
    for (int t = 0; t < threads; t++) { void *r; pthread_join(ids[t], &r); check ^= (uintptr_t)r; }
    double gbs = (double)passes * wordsPerThread * threads * sizeof(uint64_t) / (seconds() - start) / 1e9;
    if (gbs > best) best = gbs;
  }
  printf("%.2f %lu\n", best, (unsigned long)(check & 1));
  return 0;
}
