/* Peak fp32 FMA throughput of the CPU: each thread runs 12 independent vfmadd231ps chains (enough
   to hide the FMA latency on two pipes) in a hand-written loop, on zmm (AVX-512) or ymm (AVX2)
   registers. Prints GFLOP/s over wall time and per CPU-second of a thread (the rate a core reaches
   while it runs the thread, which other processes' load does not lower). Built and run by
   bench/fma-peak.ts. Usage: fma-peak THREADS ITERATIONS zmm|ymm */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAINS 12
#define FMA(R, n) "vfmadd231ps %%" R "14, %%" R "15, %%" R #n "\n"
#define TWELVE(R) FMA(R, 0) FMA(R, 1) FMA(R, 2) FMA(R, 3) FMA(R, 4) FMA(R, 5) FMA(R, 6) FMA(R, 7) FMA(R, 8) FMA(R, 9) FMA(R, 10) FMA(R, 11)
#define CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14", "xmm15", "cc"

static long iterations;
static int wide;

static double clockSeconds(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *run(void *arg) {
  long n = iterations;
  double start = clockSeconds(CLOCK_THREAD_CPUTIME_ID);
  if (wide) {
    __asm__ volatile("vpxord %%zmm14, %%zmm14, %%zmm14\n vpxord %%zmm15, %%zmm15, %%zmm15\n1:\n" TWELVE("zmm") "dec %0\n jnz 1b\n" : "+r"(n) : : CLOBBERS);
  } else {
    __asm__ volatile("vpxor %%ymm14, %%ymm14, %%ymm14\n vpxor %%ymm15, %%ymm15, %%ymm15\n1:\n" TWELVE("ymm") "dec %0\n jnz 1b\n" : "+r"(n) : : CLOBBERS);
  }
  *(double *)arg = clockSeconds(CLOCK_THREAD_CPUTIME_ID) - start;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s THREADS ITERATIONS zmm|ymm\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  iterations = atol(argv[2]);
  wide = strcmp(argv[3], "zmm") == 0;
  if (threads < 1 || threads > 256 || iterations < 1) return 2;
  pthread_t ids[256];
  double cpu[256];
  double start = clockSeconds(CLOCK_MONOTONIC);
  for (int i = 0; i < threads; i++) pthread_create(&ids[i], NULL, run, &cpu[i]);
  for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
  double wall = clockSeconds(CLOCK_MONOTONIC) - start;
  double cpuTotal = 0;
  for (int i = 0; i < threads; i++) cpuTotal += cpu[i];
  double flops = (double)threads * iterations * CHAINS * (wide ? 16 : 8) * 2;
  printf("%.2f %.2f\n", flops / wall / 1e9, flops / cpuTotal / 1e9);
  return 0;
}
