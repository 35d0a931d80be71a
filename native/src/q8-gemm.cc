// Q8_0 GEMM with int8 activations on AVX512-VNNI (and on AVX2: its section below): y[M, N] = x[M, K] W[N, K]^T, W in GGML's
// Q8_0 (blocks of 32 int8 codes along K, one float scale per block), x float32 quantized per row
// per 32-block to int8 (scale = max|x| / 127, round to nearest even), as llama.cpp's Q8_0 dot and
// MLAS's int8 MatMulNBits path (accuracy_level 4) do.
//
// Packing (q8Pack, once per weight): columns in groups of 16; per group and K-block, 512 bytes of
// codes, 16 columns x 4 consecutive K bytes per 64-byte vector (8 vectors for the block's 32 K),
// then the 16 columns' scales (64 bytes). Codes are stored biased (q + 128, unsigned, the form
// MatMulNBits takes them in) because VPDPBUSD multiplies unsigned by signed bytes: the activation
// quad is the signed operand, broadcast; the bias adds 128 * sum(activation block) per block,
// subtracted by starting the block's int32 accumulator at -128 * that sum (computed when the row is
// quantized). A block's int32 sums are then scaled into float32 accumulators (* weight scales *
// activation scale). Register tile: 4 rows x 3 column groups (12 int32 + 12 float accumulators).
// Work items are (up to 64 rows) x (3 column groups), spread over the attention thread pool
// when the call has enough work (m n k >= 5e5: every decode GEMM of the bench shapes; see gemm()).
//
// Measured (issue 16), a shared 2-core AMD EPYC Zen 5 (AVX-512 at full width, VNNI):
// - Ceiling: a loop of 16 independent VPDPBUSD zmm chains does 7.9 per ns on one core, ~1000 GOPS
//   (int8 multiply-adds x 2), ~1950 on both cores when the machine was quiet (760 / 1020 under
//   other sessions' load). Per block and 16 columns this kernel issues 8 VPDPBUSD and 4 other
//   vector ops (the accumulator's start, int->float, two multiply-adds).
// - This kernel against onnxruntime 1.30's MatMulNBits (bits 8, block 32, accuracy level 4: int8
//   activations, the runner's setting) in a one-op session built by the project's graph builder,
//   `node dist/bench/q8-gemm.js --ms 300 --rounds 2` (random Q8_0 weights, KxN = inputs x outputs,
//   interleaved; best of two rounds). Microseconds per call MatMulNBits / this kernel, speed-up,
//   at M rows of activations:
//                  thr               M=1                 8                32               128               512
//   768x768    1          13/5 2.6x         41/13 3.2x        143/51 2.8x       558/204 2.7x      2707/834 3.2x
//   768x768    2         19/13 1.5x         47/21 2.2x        147/59 2.5x       544/210 2.6x      2494/832 3.0x
//   768x2048   1         27/17 1.6x         99/36 2.8x       357/133 2.7x      1578/514 3.1x     6445/2226 2.9x
//   768x2048   2         33/16 2.1x         82/42 2.0x        223/89 2.5x       861/304 2.8x     3894/1246 3.1x
//   2048x768   1         26/16 1.6x         91/35 2.6x       331/131 2.5x      1317/518 2.5x     6108/2124 2.9x
//   2048x768   2         39/43 0.9x         81/44 1.8x        229/90 2.5x       754/312 2.4x     3766/1210 3.1x
//   2048x2048  1         58/42 1.4x        223/91 2.5x       890/343 2.6x     3842/1406 2.7x    15420/5835 2.6x
//   2048x2048  2         62/51 1.2x        226/98 2.3x       887/346 2.6x     3826/1454 2.6x    14979/5717 2.6x
//   2048x256   1          11/5 2.2x         37/13 2.8x        127/50 2.5x       484/197 2.5x      2768/793 3.5x
//   2048x256   2         17/12 1.4x         43/20 2.1x        133/58 2.3x       493/209 2.4x      2164/804 2.7x
//   2048x5632  1       135/116 1.2x       824/269 3.1x     2903/1182 2.5x    10150/4428 2.3x   41469/17244 2.4x
//   2048x5632  2       151/127 1.2x       740/270 2.7x     2823/1079 2.6x    10107/4380 2.3x   43737/17343 2.5x
//   5632x2048  1       145/111 1.3x       768/242 3.2x     2955/1004 2.9x    10590/4058 2.6x   42353/16686 2.5x
//   5632x2048  2       154/121 1.3x       716/251 2.9x     3026/1030 2.9x    11083/4158 2.7x   45119/17346 2.6x
//   One thread, this kernel runs at 620-780 GOPS from 8 rows on (~70% of the VPDPBUSD ceiling),
//   MatMulNBits at 150-300; at one row both stream the weights (~190-230 GOPS = ~1 byte per 2
//   ops). The two-thread rows were taken while other sessions held the second core (CPU time per
//   call equalled wall time for both but the 768x2048 / 2048x768 rows), so they say little about
//   scaling; 2048x768 at one row with two threads (0.9x) was the pool's wake-up, hence the work
//   threshold above, added after. Outputs agree with MatMulNBits' to 2e-7-1.2e-6 of the output's
//   largest magnitude: it quantizes the activations the same way (round to nearest even).
//   Two threads again with the threshold, the second core free this time (CPU 1.8-1.9x wall;
//   `--threads 2 --rows 1,32,512 --rounds 1`), MatMulNBits / this kernel, us:
//                     M=1           32              512
//     768x768       17/5 3.3x     96/41 2.3x     1238/462 2.7x
//     768x2048      31/16 1.9x   217/91 2.4x     3519/1125 3.1x
//     2048x768      32/18 1.8x   210/89 2.4x     3097/1177 2.6x
//     2048x2048     50/38 1.3x   477/201 2.4x    8630/2975 2.9x
//     2048x256      13/5 2.9x     97/48 2.0x     1305/581 2.2x
//     2048x5632    105/98 1.1x  1310/569 2.3x   22471/8918 2.5x
//     5632x2048    108/84 1.3x  1507/538 2.8x   22816/8273 2.8x
//   (this kernel 1100-1440 GOPS on both cores from 32 rows, ~1.9x its one-thread rate; MatMulNBits 400-560).
// - Whole runner: src/model/runner/segmented-runner.ts (the Q8_0 path: graph/q8-linear-segments.ts).
// - Prefill (issue 16, long prompts): a 100M prefill of 1024 tokens (two 512-row passes; timers
//   around each addon call and session run, two threads, two interleaved rounds on a quiet machine)
//   spends 136-143 ms in these GEMMs, 13-15 ms in siluMul on the caller alone: siluMul now splits
//   rows of 256K+ outputs over the pool, 8.3-8.6 ms in three rounds.
//   Measured and not taken: quantizing a prefill's activation rows on the pool too (64-row chunks
//   from 128 rows): `node dist/bench/q8-gemm.js --rows 512 --threads 2`, two rounds, us per call
//   768x768 447 / 453 -> 432 / 440, 2048x768 1133 / 1130 -> 1134 / 1084, 768x4096 2115 / 2116 ->
//   2135 / 2055: the quantization is ~10 us of a 450 us call, ~1 ms of a 512-row pass.
// - Batch-32 decode step (issue 16, "batching gain >= 8x with short prompts"). Where the 100M step
//   went (perf record -e cpu-clock over 300 steps of the runner alone, both threads): at context
//   128 with float32 K/V (bench/forward.js's default) this kernel's tile 48% of the samples, the
//   attention kernel 41% (304 MB of K/V a step, at the memory's rate), quantizeRow 1%, siluMul
//   0.9%, the pool's hand-offs ~2%, norms, RoPE, K/V writes and JS each under 1%; at context 40
//   with float16 K/V (what short prompts are served with) the tile 70%, attention 18%. Timers
//   around each addon call (context 40, float16; ms a step, two rounds): q, k, v, o (48 calls)
//   2.38-2.60, gate_up 2.49-3.11, down 1.33-1.48, head 1.52-1.82, attention 2.19-2.26, K/V writes
//   0.3, siluMul 0.2-0.5, norms 0.15, RoPE 0.1, JS 0.3-0.4, of 10.9-12.8. The GEMMs ran ~1.5x
//   slower there than in this bench, because there each call streams its weights from memory
//   (`--cold` here) and here they stay cached: 2 threads, spin 100, 32 rows, us per call cached /
//   from memory: 768x768 29 / 45, 768x4096 141-154 / 216-218, 2048x768 75-76 / 104-110, 768x32000
//   1550-1608 / 1761-1784. Two changes cut that:
//   * Each thread claims its next item before running the current one and prefetches that item's
//     weights into L2 while the current item's row tiles run (spread over their blocks; an item's
//     weights are contiguous). From memory: 768x4096 216-218 -> 185-235, head 1761-1784 -> 1486-1568,
//     one thread 2048x5632 1142-1218 -> 1000 us (CPU); 768x768 unchanged (its first item per thread is the cost).
//   * The packed weights in transparent huge pages (huge-page-arena.h: 2 MB-aligned slabs,
//     madvise before the first write): each 4 KB of weights had cost a page walk. From memory,
//     the same process alternating huge / 4 KB pages (both prefetching), CPU us per call: 768x768
//     55-62 / 69-88, 768x4096 299-345 / 350-487, 2048x768 182-198 / 223-233, 768x32000 2503-2673 /
//     3148-3447.
//   Both, runner alone, 100M batch 32 at context 40 (float16), separate processes alternating, CPU
//   ms a step: 17.1 / 17.4 against 20.8 / 21.4 with neither (wall 8.7-9.4 against 10.7-10.9 when
//   quiet); timers after: q, k, v, o 1.72-1.87 ms, gate_up 1.88-2.07, down 1.11-1.16, head 1.29-1.47,
//   step 9.2-10.1. The 1.1B step (context 128, float32; 73.5 ms: attention 20.1, gate_up 23.1, down
//   12.8, q and o 8.9, k and v 1.9, head 3.0, siluMul 1.1, norms 1.0, the rest 1.6) did not move
//   with huge pages (80-81 against 75-85 ms): its GEMMs already run at the cached rate, 1270-1410 GOPS.
//   With the siluMul split below, main -> this, runner alone (`node dist/bench/forward.js --models
//   100m-gguf|1b-gguf --contexts 128 --batches 1,32 --seconds 3`, float32 K/V, interleaved under the
//   bench lock; tok/s, CPU ms a step): 100M batch 32 1727 / 1725 / 1845 / 1921 -> 2117 / 1982 / 2100 /
//   2231 (CPU 36.3 / 36.4 / 34.1 / 32.8 -> 29.7 / 31.7 / 29.6 / 28.3), batch 1 300 / 286 / 312 / 284
//   -> 290 / 265 / 350 / 349; 1.1B batch 32 358 / 371 -> 434 / 436 (CPU 176 / 170 -> 145 / 144), batch
//   1 49.8 / 37.7 -> 39.0 / 38.7 (CPU 40 / 53 -> 51 / 51). Served 100M, short prompts, 64 tokens
//   (`bench/serve.js --models 100m --prompts short --concurrency 1,32 --repeat 1 --peer
//   llama-server`), two pairs: 32 streams 1930 / 1848 -> 2361 / 2191 tok/s (TPOT p50 15.1 / 16.1 ->
//   12.4 / 13.3 ms), batching gain 6.50 / 7.21 -> 7.53 / 7.86. Against main with the GQA decode
//   kernel (attention.cc), one round: 100M batch 32 1756 -> 2087 (CPU 35.8 -> 29.9), batch 1 283 ->
//   300; 1.1B batch 32 401 -> 449 (CPU 156 -> 141), batch 1 35.7 -> 41.5.
//   What is left in the tile is arithmetic: per block and 4x3 tile, 96 VPDPBUSD and 12 each of
//   accumulator starts, int->float conversions, multiplies and FMAs; the float step is one per
//   row, 16 columns and block (the activation and weight scales are both per block), so it cannot
//   be merged across blocks without changing the results.
//   Measured and not taken: VPDPBUSD with the activation quad as its {1to16} memory operand
//   (no separate broadcast; three times the loads): one thread, cached, 768x768 52-54 -> 62-63 us,
//   768x4096 267-272 -> 319-334, 2048x768 136-148 -> 163-170. Each thread's last item
//   prefetching the first 64 KB (per thread) of the next call's weights (q8Gemm told which): 100M
//   batch 32, same process alternating, four rounds, no difference (the quiet round: q, k, v, o
//   2.18 against 2.17 ms, the step 10.9 against 11.2).
//
// AVX2 (q8-gemm-avx2.inc; CPUs with AVX2 + FMA + F16C and no AVX512-VNNI, chosen at run time: the
// VNNI kernel and everything it calls are unchanged). Same packed weights, same activation
// quantization, same int32 block sums and float steps, so the same bits as the VNNI kernel
// (q8-gemm.test.ts checks both against an integer reference, and against each other where a CPU
// has both). VPMADDUBSW + VPMADDWD(ones) on |q| and the sign-carrying activation; details there.
// Measured on a shared 2-core AMD EPYC Zen 1 (2.0 GHz, 256-bit ops as two 128-bit halves; one
// vector integer multiplier: two multiplies per 16 byte products, a ceiling of 8 multiply-adds a
// cycle, the same as float32 FMA):
// - Kernel only, one thread, CPU us per call (a throwaway script looping q8Gemm, best of 5 x 60 ms):
//   768x768 M=1 45, 32 1437-1473, 512 23208-23707 (~6.6 multiply-adds a cycle, ~80% of that
//   ceiling), 2048x768 117-119 / 3820-3918 / 61259-62500, 768x4096 242-247 / 7639-7730 / 121760-124114.
//   Measured and not taken: a second, signed packing for AVX2 (no in-register xor 0x80; timed by
//   dropping the xor): 1437 / 23208 against 1473 / 23707 us, within the noise (the multiplier is the
//   bound, the xor runs beside it); one 8-column half at a time (4 int32 accumulators live instead
//   of 8, which spill to the stack in the 4-row x 16-column tile): 1524 / 24071, slower (GCC hoisted
//   the 32 activation broadcasts out of the half loop and spilled those instead).
// - Against MatMulNBits (accuracy level 4), `node dist/bench/q8-gemm.js --shapes
//   768x768,768x4096,2048x768,2048x5632 --rows 1,32,512 --threads 1,2 --ms 200 --rounds 1 --spin
//   100`, load average 4-8 on the 2 cores (other sessions: the two-thread rows mostly ran on one),
//   us per call MatMulNBits / this kernel (wall; CPU where it differs much):
//                  thr     M=1               32                      512
//   768x768     1       125/43 2.9x     5262/1442 3.7x (cpu 2.1x)   65588/35233 1.9x
//   768x768     2       136/43 3.2x     2851/1441 2.0x              68175/35766 1.9x
//   768x4096    1       550/236 2.3x    22161/11786 1.9x            231246/185025 1.3x (cpu 1.9x)
//   768x4096    2       610/234 2.6x    24263/11730 2.1x            338642/186328 1.8x
//   2048x768    1       256/113 2.3x    11241/6560 1.7x (cpu 1.9x)  113607/82233 1.4x (cpu 1.8x)
//   2048x768    2       272/118 2.3x    8159/3817 2.1x              113565/62140 1.8x
//   2048x5632   1       2419/2111 1.15x 50393/27717 1.8x            1209963/444024 2.7x (cpu 1.8x)
//   2048x5632   2       2315/2133 1.09x 50387/28065 1.8x            826829/455908 1.8x
//   Again at load 4 (`--shapes 768x768,768x2048,2048x5632 --threads 2`, CPU us): 768x768 149/46,
//   3076/1580, 45429/24595; 768x2048 288/118, 7869/4155, 118282/66351; 2048x5632 2091/1896,
//   52784/29148, 846585/464147. This kernel runs at ~26-27 GOPS a core from 32 rows (MatMulNBits
//   9-15); at one row both stream the weights (2048x5632: 11.5 MB in ~1.9-2.1 ms, ~6 GB/s, this
//   VM's memory), so the 1.1B shapes tie there. Outputs agree with MatMulNBits' to 2.4e-7-6.3e-7 of
//   the output's largest magnitude.
// - Whole runner: segmented-runner.ts's header (the q8 path wins at batch 1 and 32 and prefill on
//   the 100M model, and at batch 32 and prefill on the 1.1B, where batch 1 ties), so q8Available
//   is true on AVX2 CPUs, one rule for every shape.
// - siluMul on AVX2: silu-mul-avx2.h (shared with f32-decoder.cc). addRmsNorm needs nothing here (rms-norm.cc's portable build).
#include <node_api.h>

#include "silu-mul-avx2.h"
#include "silu-mul512.h"
#include "huge-page-arena.h"
#include "napi-args.h"
#include "thread-pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_Q8_X86 1
#endif

namespace ortllm {
namespace {

using namespace ortllm::napi;

constexpr int kBlock = 32;                       // Q8_0 block (K elements per scale)
constexpr int kGroup = 16;                       // output columns per vector
constexpr int kBlockBytes = kBlock * kGroup;     // codes of one group and block
constexpr int kPackedBlock = kBlockBytes + 64;   // + the group's 16 float scales
constexpr int kTileRows = 4;
constexpr int kTileGroups = 3;
constexpr int kChunkRows = 64;
HugePageArena weightArena;  // q8Pack's packed weights (huge-page-arena.h)
// siluMul outputs from which helpers share it: prefills, and batch-32 decodes (100M 32 x 2048,
// 1.1B 32 x 5632: a 1.1B step's 22 calls 2.3 -> 1.3 ms in the one quiet round of three, as the Q8_0
// runner's helper spins; it was 256K, for prefills only).
constexpr size_t kSiluParallelElements = 32 * 1024;

struct Quantized {  // the activations, quantized per row and block
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> bias;  // -128 * sum of the block's codes
};

bool vnniAvailable() {
#ifdef ORTLLM_Q8_X86
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  return ok;
#else
  return false;
#endif
}

#ifdef ORTLLM_Q8_X86
#define VNNI_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

VNNI_FN void quantizeRow(const float* x, int k, int8_t* q, float* scale, int32_t* bias) {
  const __m512 absMask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  for (int b = 0; b < k / kBlock; b++) {
    __m512 v0 = _mm512_loadu_ps(x + b * kBlock), v1 = _mm512_loadu_ps(x + b * kBlock + 16);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(v0, absMask), _mm512_and_ps(v1, absMask)));
    float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
    __m512 s = _mm512_set1_ps(id);
    __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, s)), i1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, s));
    _mm_storeu_si128((__m128i*)(q + b * kBlock), _mm512_cvtsepi32_epi8(i0));
    _mm_storeu_si128((__m128i*)(q + b * kBlock + 16), _mm512_cvtsepi32_epi8(i1));
    scale[b] = d;
    bias[b] = -128 * _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
  }
}

// Rows [0, R) x groups [0, C) of one tile: a = quantized rows (stride k), w = the first group's
// packed blocks (groups `groupStride` bytes apart), y = output rows (stride n) from column col0.
template <int R, int C>
VNNI_FN void tile(const int8_t* a, const float* as, const int32_t* ab, int k, const uint8_t* w, size_t groupStride, float* y,
                  int n, int col0, const char* pf, int pfLines) {
  const int blocks = k / kBlock;
  __m512 f[R][C];
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) f[r][c] = _mm512_setzero_ps();
  for (int b = 0; b < blocks; b++) {
    const uint8_t* wb = w + (size_t)b * kPackedBlock;
    for (int i = 0; i < pfLines; i++) _mm_prefetch(pf + ((size_t)b * pfLines + i) * 64, _MM_HINT_T1);
    __m512i acc[R][C];
    for (int r = 0; r < R; r++) {
      __m512i init = _mm512_set1_epi32(ab[(size_t)r * blocks + b]);
      for (int c = 0; c < C; c++) acc[r][c] = init;
    }
    for (int q = 0; q < kBlock / 4; q++) {
      __m512i wq[C];
      for (int c = 0; c < C; c++) wq[c] = _mm512_loadu_si512(wb + c * groupStride + q * 64);
      for (int r = 0; r < R; r++) {
        int32_t quad;
        std::memcpy(&quad, a + (size_t)r * k + b * kBlock + q * 4, 4);
        __m512i av = _mm512_set1_epi32(quad);
        for (int c = 0; c < C; c++) acc[r][c] = _mm512_dpbusd_epi32(acc[r][c], wq[c], av);
      }
    }
    for (int c = 0; c < C; c++) {
      __m512 ws = _mm512_loadu_ps((const float*)(wb + c * groupStride + kBlockBytes));
      for (int r = 0; r < R; r++)
        f[r][c] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][c]), ws), _mm512_set1_ps(as[(size_t)r * blocks + b]), f[r][c]);
    }
  }
  for (int c = 0; c < C; c++) {
    const int at = col0 + c * kGroup;
    const int left = n - at;
    const __mmask16 mask = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    for (int r = 0; r < R; r++) _mm512_mask_storeu_ps(y + (size_t)r * n + at, mask, f[r][c]);
  }
}

using TileFn = void (*)(const int8_t*, const float*, const int32_t*, int, const uint8_t*, size_t, float*, int, int, const char*, int);

template <int R>
constexpr TileFn tileFor(int c) {
  return c == 1 ? tile<R, 1> : c == 2 ? tile<R, 2> : tile<R, 3>;
}

const TileFn kTiles[kTileRows][kTileGroups] = {
    {tileFor<1>(1), tileFor<1>(2), tileFor<1>(3)},
    {tileFor<2>(1), tileFor<2>(2), tileFor<2>(3)},
    {tileFor<3>(1), tileFor<3>(2), tileFor<3>(3)},
    {tileFor<4>(1), tileFor<4>(2), tileFor<4>(3)},
};

void gemm(const uint8_t* packed, const float* x, float* y, int m, int n, int k) {
  thread_local Quantized qa;  // the calling thread's quantized rows, reused between calls
  const int blocks = k / kBlock;
  qa.q.resize((size_t)m * k);
  qa.scale.resize((size_t)m * blocks);
  qa.bias.resize((size_t)m * blocks);
  for (int r = 0; r < m; r++)
    quantizeRow(x + (size_t)r * k, k, qa.q.data() + (size_t)r * k, qa.scale.data() + (size_t)r * blocks, qa.bias.data() + (size_t)r * blocks);
  const int groups = (n + kGroup - 1) / kGroup;
  const size_t groupStride = (size_t)blocks * kPackedBlock;
  const int colItems = (groups + kTileGroups - 1) / kTileGroups;
  // The helpers read the caller's rows (qa is the caller's thread_local).
  const int8_t* aq = qa.q.data();
  const float* as = qa.scale.data();
  const int32_t* ab = qa.bias.data();
  const int rowItems = (m + kChunkRows - 1) / kChunkRows;
  const int items = rowItems * colItems;
  // One item: rows [r0, r1) x groups [g0, g0 + c). Its row tiles each re-read the item's weights
  // (from L1/L2 after the first); while they do, the next item's weights (`pf`, contiguous) are
  // prefetched into L2, spread over the tiles' blocks.
  auto runItem = [&](int item, int nextItem) {
    const int g0 = (item % colItems) * kTileGroups, c = std::min(kTileGroups, groups - g0);
    const int r0 = (item / colItems) * kChunkRows, r1 = std::min(m, r0 + kChunkRows);
    const int passes = (r1 - r0 + kTileRows - 1) / kTileRows;
    const char* pf = nullptr;
    int pfLines = 0;
    if (nextItem < items && passes > 1) {
      const int ng0 = (nextItem % colItems) * kTileGroups, nc = std::min(kTileGroups, groups - ng0);
      pf = (const char*)(packed + ng0 * groupStride);
      const size_t lines = (nc * groupStride + 63) / 64;
      pfLines = (int)((lines + (size_t)passes * blocks - 1) / ((size_t)passes * blocks));
    }
    for (int r = r0, p = 0; r < r1; r += kTileRows, p++) {
      const int rows = std::min(kTileRows, r1 - r);
      kTiles[rows - 1][c - 1](aq + (size_t)r * k, as + (size_t)r * blocks, ab + (size_t)r * blocks, k,
                              packed + g0 * groupStride, groupStride, y + (size_t)r * n, n, g0 * kGroup,
                              pf ? pf + (size_t)p * blocks * pfLines * 64 : nullptr, pf ? pfLines : 0);
    }
  };
  // Each thread claims its next item before it runs the current one, so it knows what to prefetch.
  std::atomic<int> next{0};
  std::function<void(int)> fn = [&](int) {
    for (int cur = next.fetch_add(1); cur < items;) {
      const int following = next.fetch_add(1);
      runItem(cur, following);
      cur = following;
    }
  };
  // Helpers from 5e5 multiply-adds: every decode GEMM of the 100M and 1.1B shapes. One thread
  // streams weights at ~35 GB/s, two at ~46 (the machine's read bandwidth): 100M at one row,
  // 768x768 19 -> 15 us, 768x4096 100 -> 75, 2048x768 45 -> 37. It pays since the pool's helper
  // spins between calls (attention.cc's spinMicros, which the Q8_0 runner sets; figures there).
  // Before, with a futex wake-up per call, helpers from 1M at one row had measured no faster:
  // batch-1 steps/s 229 / 233 against 229 / 222, at 5.8-6.0 CPU ms per step against 4.9-5.0, so the threshold was 4M.
  if ((double)m * n * k >= 5e5)
    parallelFor(std::min(items, parallelThreads()), fn);
  else
    fn(0);
}

// The SwiGLU between gate_up and down (silu-mul512.h).
VNNI_FN void siluMul(const float* gu, float* out, int rows, int width) { siluMul512(gu, out, rows, width); }

#include "q8-gemm-avx2.inc"
#endif

// Which kernel runs q8Gemm and siluMul: the VNNI one where the CPU has it, else the AVX2 one.
enum class Kernel { none, avx2, vnni };

Kernel bestKernel() {
#ifdef ORTLLM_Q8_X86
  if (vnniAvailable()) return Kernel::vnni;
  if (avx2Available()) return Kernel::avx2;
#endif
  return Kernel::none;
}

// The optional last argument of q8Gemm and siluMul: 'avx2' or 'avx512vnni' (tests and benches
// run the AVX2 kernel on a VNNI CPU with it); absent, the best this CPU has. False when it names
// neither or one this CPU lacks.
bool kernelArg(napi_env env, napi_value v, Kernel* out) {
  char name[16];
  size_t len;
  if (napi_get_value_string_utf8(env, v, name, sizeof name, &len) != napi_ok) return false;
  const Kernel best = bestKernel();
  if (std::strcmp(name, "avx512vnni") == 0 && best == Kernel::vnni) *out = Kernel::vnni;
  else if (std::strcmp(name, "avx2") == 0 && best != Kernel::none) *out = Kernel::avx2;
  else return false;
  return true;
}

// readArgs for `n` arguments and an optional kernel name after them.
bool readArgsAndKernel(napi_env env, napi_callback_info info, size_t n, napi_value* argv, Kernel* kernel) {
  size_t argc = n + 1;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  *kernel = bestKernel();
  return argc == n || (argc == n + 1 && kernelArg(env, argv[n], kernel));
}

}  // namespace

// q8Pack(codes Uint8Array [n * k] (q + 128, row-major [n, k]), scales Float32Array [n * k / 32], n, k): the packed Uint8Array.
napi_value Q8Pack(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int32_t dims[2];
  if (!readArgs(env, info, 4, argv) || !ints(env, argv + 2, 2, dims)) return fail(env, "q8Pack: expected (codes, scales, n, k)");
  const int n = dims[0], k = dims[1];
  if (n <= 0 || k <= 0 || k % kBlock) return fail(env, "q8Pack: n must be positive and k a positive multiple of 32");
  void *codesData, *scalesData;
  size_t codesLen, scalesLen;
  if (!typed(env, argv[0], napi_uint8_array, &codesData, &codesLen) || codesLen != (size_t)n * k) return fail(env, "q8Pack: codes must be a Uint8Array of n * k");
  if (!typed(env, argv[1], napi_float32_array, &scalesData, &scalesLen) || scalesLen != (size_t)n * (k / kBlock))
    return fail(env, "q8Pack: scales must be a Float32Array of n * k / 32");
  const uint8_t* codes = (const uint8_t*)codesData;
  const float* scales = (const float*)scalesData;
  const int blocks = k / kBlock, groups = (n + kGroup - 1) / kGroup;
  const size_t bytes = (size_t)groups * blocks * kPackedBlock;
  void* outData;
  napi_value buffer, out;
  HugePageArena::Slab* slab = nullptr;
  outData = weightArena.allocate(bytes, &slab);
  if (outData) {
    // V8 counts an ordinary ArrayBuffer's bytes as external memory, which paces its collections
    // (the loader's transient copies go sooner); this one is reported by hand, for the same pacing.
    struct Piece {
      HugePageArena::Slab* slab;
      int64_t bytes;
    };
    auto release = [](napi_env finalizing, void*, void* hint) {
      auto* piece = (Piece*)hint;
      int64_t ignored;
      napi_adjust_external_memory(finalizing, -piece->bytes, &ignored);
      weightArena.release(piece->slab);
      delete piece;
    };
    auto* piece = new Piece{slab, (int64_t)bytes};
    if (napi_create_external_arraybuffer(env, outData, bytes, release, piece, &buffer) != napi_ok) {
      weightArena.release(slab);
      delete piece;
      return fail(env, "q8Pack: cannot wrap the packed weights");
    }
    int64_t ignored;
    napi_adjust_external_memory(env, (int64_t)bytes, &ignored);
  } else if (napi_create_arraybuffer(env, bytes, &outData, &buffer) != napi_ok) {
    return fail(env, "q8Pack: out of memory");
  }
  uint8_t* p = (uint8_t*)outData;
  for (int g = 0; g < groups; g++)
    for (int b = 0; b < blocks; b++) {
      uint8_t* dst = p + ((size_t)g * blocks + b) * kPackedBlock;
      float* dstScales = (float*)(dst + kBlockBytes);
      for (int col = 0; col < kGroup; col++) {
        const int row = g * kGroup + col;  // a row of W = an output column
        for (int kk = 0; kk < kBlock; kk++)  // columns past n: zero weights (code 128, scale 0)
          dst[(kk / 4) * 64 + col * 4 + kk % 4] = row < n ? codes[(size_t)row * k + b * kBlock + kk] : 128;
        const float s = row < n ? scales[(size_t)row * blocks + b] : 0.0f;
        std::memcpy(dstScales + col, &s, 4);
      }
    }
  napi_create_typedarray(env, napi_uint8_array, bytes, buffer, 0, &out);
  return out;
}

// q8Gemm(packed, x Float32Array [m * k], y Float32Array [m * n], m, n, k): y = x W^T.
napi_value Q8Gemm(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  int32_t dims[3];
  Kernel kernel;
  if (!readArgsAndKernel(env, info, 6, argv, &kernel) || !ints(env, argv + 3, 3, dims))
    return fail(env, "q8Gemm: expected (packed, x, y, m, n, k[, 'avx2' | 'avx512vnni' where this CPU has it])");
  const int m = dims[0], n = dims[1], k = dims[2];
  if (m < 0 || n <= 0 || k <= 0 || k % kBlock) return fail(env, "q8Gemm: bad m, n, k");
  void *packed, *x, *y;
  size_t packedLen, xLen, yLen;
  const size_t want = (size_t)((n + kGroup - 1) / kGroup) * (k / kBlock) * kPackedBlock;
  if (!typed(env, argv[0], napi_uint8_array, &packed, &packedLen) || packedLen != want) return fail(env, "q8Gemm: packed does not match n, k");
  if (!typed(env, argv[1], napi_float32_array, &x, &xLen) || xLen != (size_t)m * k) return fail(env, "q8Gemm: x must be a Float32Array of m * k");
  if (!typed(env, argv[2], napi_float32_array, &y, &yLen) || yLen != (size_t)m * n) return fail(env, "q8Gemm: y must be a Float32Array of m * n");
  if (kernel == Kernel::none) return fail(env, "q8Gemm: this CPU has neither AVX512-VNNI nor AVX2");
#ifdef ORTLLM_Q8_X86
  if (m > 0 && kernel == Kernel::vnni) gemm((const uint8_t*)packed, (const float*)x, (float*)y, m, n, k);
  if (m > 0 && kernel == Kernel::avx2) gemmAvx2((const uint8_t*)packed, (const float*)x, (float*)y, m, n, k);
#endif
  return nullptr;
}

// siluMul(gu Float32Array [rows * 2 * width], out Float32Array [rows * width], width): silu(gate) * up per row.
napi_value SiluMul(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int32_t width;
  Kernel kernel;
  if (!readArgsAndKernel(env, info, 3, argv, &kernel) || !ints(env, argv + 2, 1, &width) || width <= 0)
    return fail(env, "siluMul: expected (gu, out, width > 0[, 'avx2' | 'avx512vnni' where this CPU has it])");
  void *gu, *out;
  size_t guLen, outLen;
  if (!typed(env, argv[0], napi_float32_array, &gu, &guLen) || guLen % (2 * (size_t)width)) return fail(env, "siluMul: gu must be a Float32Array of rows * 2 * width");
  if (!typed(env, argv[1], napi_float32_array, &out, &outLen) || 2 * outLen != guLen) return fail(env, "siluMul: out must be a Float32Array of rows * width");
  if (kernel == Kernel::none) return fail(env, "siluMul: this CPU has neither AVX512-VNNI nor AVX2");
#ifdef ORTLLM_Q8_X86
  const int rows = (int)(outLen / width);
  const auto rowsOf = kernel == Kernel::vnni ? siluMul : siluMulAvx2;
  // A prefill's SwiGLU (100M: 512 rows x 2048 a pass, ~1.5 ms on one core; 1.1B 512 x 5632) and
  // a large batch's decode in chunks of rows over the pool; a few rows on the caller.
  constexpr int kSiluChunkRows = 16;
  if ((size_t)rows * width >= kSiluParallelElements) {
    std::function<void(int)> fn = [&](int i) {
      const int r0 = i * kSiluChunkRows;
      rowsOf((const float*)gu + (size_t)r0 * 2 * width, (float*)out + (size_t)r0 * width, std::min(kSiluChunkRows, rows - r0), width);
    };
    parallelFor((rows + kSiluChunkRows - 1) / kSiluChunkRows, fn);
  } else {
    rowsOf((const float*)gu, (float*)out, rows, width);
  }
#endif
  return nullptr;
}

// rope(x Float32Array [rows * heads * headDim], cos, sin Float32Array [rows * headDim / 2], heads, headDim):
// in place, each head's halves rotated as onnxruntime's RotaryEmbedding (interleaved 0) does with
// row r's cos/sin: x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin (x1 the head's first half, x2 its second).
napi_value Rope(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  int32_t dims[2];
  if (!readArgs(env, info, 5, argv) || !ints(env, argv + 3, 2, dims) || dims[0] <= 0 || dims[1] <= 0 || dims[1] % 2) return fail(env, "rope: expected (x, cos, sin, heads, even headDim)");
  const size_t heads = dims[0], headDim = dims[1], half = headDim / 2;
  void *x, *cs, *sn;
  size_t xLen, cosLen, sinLen;
  if (!typed(env, argv[0], napi_float32_array, &x, &xLen) || xLen % (heads * headDim)) return fail(env, "rope: x must be a Float32Array of rows * heads * headDim");
  const size_t rows = xLen / (heads * headDim);
  if (!typed(env, argv[1], napi_float32_array, &cs, &cosLen) || !typed(env, argv[2], napi_float32_array, &sn, &sinLen) || cosLen != rows * half || sinLen != cosLen)
    return fail(env, "rope: cos and sin must be Float32Arrays of rows * headDim / 2");
  float* xp = (float*)x;
  for (size_t r = 0; r < rows; r++) {
    const float* c = (const float*)cs + r * half;
    const float* sp = (const float*)sn + r * half;
    for (size_t h = 0; h < heads; h++) {
      float* v = xp + (r * heads + h) * headDim;
      for (size_t i = 0; i < half; i++) {
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * sp[i];
        v[i + half] = x2 * c[i] + x1 * sp[i];
      }
    }
  }
  return nullptr;
}

napi_value Q8Available(napi_env env) {
  napi_value v;
  napi_get_boolean(env, bestKernel() != Kernel::none, &v);
  return v;
}

}  // namespace ortllm
