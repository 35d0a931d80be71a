// Q8_0 GEMM with int8 activations on AVX512-VNNI (and on AVX2: q8-gemm-avx2.inc): y = x W^T, W in GGML's
// Q8_0 (blocks of 32 int8 codes along K, one float scale per block), x float32 quantized per row
// per 32-block to int8 (scale = max|x| / 127, round to nearest even), as llama.cpp's Q8_0 dot and
// MLAS's int8 MatMulNBits path (accuracy_level 4) do. Figures: docs/perf/q8-gemm.md.
#include "silu-mul-avx2.h"
#include "silu-mul512.h"
#include "cpu-features.h"
#include "q8-gemm.h"
#include "thread-pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

// Packing (q8Pack, once per weight): columns in groups of 16; per group and K-block, 512 bytes of
// codes, 16 columns x 4 consecutive K bytes per 64-byte vector (8 vectors for the block's 32 K),
// then the 16 columns' scales (64 bytes). Codes are stored biased (q + 128, unsigned, the form
// MatMulNBits takes them in) because VPDPBUSD multiplies unsigned by signed bytes: the activation
// quad is the signed operand, broadcast; the bias adds 128 * sum(activation block) per block,
// subtracted by starting the block's int32 accumulator at -128 * that sum (computed when the row is
// quantized). A block's int32 sums are then scaled into float32 accumulators (* weight scales *
// activation scale). Register tile: 4 rows x 3 column groups (12 int32 + 12 float accumulators).
// Work items are (up to 64 rows) x (3 column groups), spread over the addon's thread pool
// when the call has enough work (m n k >= 5e5: every decode GEMM of the bench shapes; see gemm()).
//
// AVX2 (q8-gemm-avx2.inc; CPUs with AVX2 + FMA + F16C and no AVX512-VNNI, chosen at run time: the
// VNNI kernel and everything it calls are unchanged). Same packed weights, same activation
// quantization, same int32 block sums and float steps, so the same bits as the VNNI kernel
// (q8-gemm.test.ts checks both against an integer reference, and against each other where a CPU
// has both). VPMADDUBSW + VPMADDWD(ones) on |q| and the sign-carrying activation; details there.
// Figures on a Zen 1 and against MatMulNBits: docs/perf/q8-gemm.md. siluMul on AVX2: silu-mul-avx2.h
// (shared with f32-decoder.cc); addRmsNorm needs nothing here (rms-norm.cc's portable build).

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_Q8_X86 1
#endif

namespace ortllm {
namespace {

constexpr int kBlock = kQ8Block;
constexpr int kGroup = 16;                       // output columns per vector
constexpr int kBlockBytes = kBlock * kGroup;     // codes of one group and block
constexpr int kPackedBlock = kBlockBytes + 64;   // + the group's 16 float scales
constexpr int kTileRows = 4;
constexpr int kTileGroups = 3;
constexpr int kChunkRows = 64;
// siluMul outputs from which helpers share it: prefills, and batch-32 decodes (100M 32 x 2048,
// 1.1B 32 x 5632: a 1.1B step's 22 calls 2.3 -> 1.3 ms in the one quiet round of three, as the Q8_0
// runner's helper spins; it was 256K, for prefills only).
constexpr size_t kSiluParallelElements = 32 * 1024;

struct Quantized {  // the activations, quantized per row and block
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> bias;  // -128 * sum of the block's codes
};

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

// Five to eight rows (a speculative verification step's): one pass of all the rows over each
// group or pair of groups, so the weights are read once, from L2, instead of once per 4-row tile
// (100M shape, 5 rows: the second tile's pass re-read every weight, ~0.5 ms a step). Two groups
// hold 2R int32 and 2R float accumulators, too many registers past six rows. Each output's sums
// run in the same order whatever the tile, so the bits do not change.
constexpr int kTallMin = 5, kTallMax = 8;

template <int R>
constexpr TileFn tallFor(int c) {
  return c == 1 || R > 6 ? tile<R, 1> : tile<R, 2>;
}

const TileFn kTallTiles[kTallMax - kTallMin + 1][2] = {
    {tallFor<5>(1), tallFor<5>(2)},
    {tallFor<6>(1), tallFor<6>(2)},
    {tallFor<7>(1), tallFor<7>(1)},
    {tallFor<8>(1), tallFor<8>(1)},
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
  // prefetched into L2, spread over the tiles' blocks. A decode's item (1-4 rows, one pass) streams
  // its weights from memory once, and the thread's next item is seldom the adjacent one (the
  // threads take items in turn), so the hardware prefetcher starts cold on it: prefetching it
  // during the current one keeps a second stream in flight (docs/perf/q8-gemm.md).
  auto runItem = [&](int item, int nextItem) {
    const int g0 = (item % colItems) * kTileGroups, c = std::min(kTileGroups, groups - g0);
    const int r0 = (item / colItems) * kChunkRows, r1 = std::min(m, r0 + kChunkRows);
    const int tall = r1 - r0 >= kTallMin && r1 - r0 <= kTallMax ? r1 - r0 : 0;
    const int tallGroups = tall > 6 ? 1 : 2;  // groups per tall pass
    const int passes = tall ? (c + tallGroups - 1) / tallGroups : (r1 - r0 + kTileRows - 1) / kTileRows;
    const char* pf = nullptr;
    int pfLines = 0;
    if (nextItem < items) {
      const int ng0 = (nextItem % colItems) * kTileGroups, nc = std::min(kTileGroups, groups - ng0);
      pf = (const char*)(packed + ng0 * groupStride);
      const size_t lines = (nc * groupStride + 63) / 64;
      pfLines = (int)((lines + (size_t)passes * blocks - 1) / ((size_t)passes * blocks));
    }
    if (tall) {
      for (int g = g0, p = 0; g < g0 + c; g += tallGroups, p++)
        kTallTiles[tall - kTallMin][std::min(tallGroups, g0 + c - g) - 1](aq + (size_t)r0 * k, as + (size_t)r0 * blocks, ab + (size_t)r0 * blocks, k,
                                                                        packed + g * groupStride, groupStride, y + (size_t)r0 * n, n, g * kGroup,
                                                                        pf ? pf + (size_t)p * blocks * pfLines * 64 : nullptr, pf ? pfLines : 0);
      return;
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
  // spins between calls (thread-pool.cc's spinMicros, which the Q8_0 runner sets; docs/perf/thread-pool.md).
  // Before, with a futex wake-up per call, helpers from 1M at one row had measured no faster:
  // batch-1 steps/s 229 / 233 against 229 / 222, at 5.8-6.0 CPU ms per step against 4.9-5.0, so the threshold was 4M.
  if ((double)m * n * k >= 5e5)
    parallelFor(std::min(items, parallelThreads()), fn);
  else
    fn(0);
}

// The SwiGLU between gate_up and down (silu-mul512.h), and gemma's GeGLU.
VNNI_FN void siluMul(const float* gu, float* out, int rows, int width) { siluMul512(gu, out, rows, width); }
VNNI_FN void geluTanhMul(const float* gu, float* out, int rows, int width) { siluMul512<true>(gu, out, rows, width); }

#include "q8-gemm-avx2.inc"
#endif

using Kernel = Q8Kernel;

Kernel bestKernel() {
#ifdef ORTLLM_Q8_X86
  if (cpu::avx512Vnni()) return Kernel::vnni;
  if (avx2Available()) return Kernel::avx2;
#endif
  return Kernel::none;
}

}  // namespace

Q8Kernel q8BestKernel() { return bestKernel(); }

size_t q8PackedBytes(int n, int k) { return (size_t)((n + kGroup - 1) / kGroup) * (k / kBlock) * kPackedBlock; }

void q8Pack(const uint8_t* codes, const float* scales, int n, int k, uint8_t* p) {
  const int blocks = k / kBlock, groups = (n + kGroup - 1) / kGroup;
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
}

void q8Gemm(Q8Kernel kernel, const uint8_t* packed, const float* x, float* y, int m, int n, int k) {
#ifdef ORTLLM_Q8_X86
  if (m > 0 && kernel == Kernel::vnni) gemm(packed, x, y, m, n, k);
  if (m > 0 && kernel == Kernel::avx2) gemmAvx2(packed, x, y, m, n, k);
#endif
}

void q8SiluMul(Q8Kernel kernel, const float* gu, float* out, int rows, int width, bool geluTanh) {
#ifdef ORTLLM_Q8_X86
  using RowsFn = void (*)(const float*, float*, int, int);
  const RowsFn rowsOf = geluTanh ? (kernel == Kernel::vnni ? geluTanhMul : siluMulAvx2<true>) : (kernel == Kernel::vnni ? siluMul : siluMulAvx2<false>);
  // A prefill's SwiGLU (100M: 512 rows x 2048 a pass, ~1.5 ms on one core; 1.1B 512 x 5632) and
  // a large batch's decode in chunks of rows over the pool; a few rows on the caller.
  constexpr int kSiluChunkRows = 16;
  if ((size_t)rows * width >= kSiluParallelElements) {
    std::function<void(int)> fn = [&](int i) {
      const int r0 = i * kSiluChunkRows;
      rowsOf(gu + (size_t)r0 * 2 * width, out + (size_t)r0 * width, std::min(kSiluChunkRows, rows - r0), width);
    };
    parallelFor((rows + kSiluChunkRows - 1) / kSiluChunkRows, fn);
  } else {
    rowsOf(gu, out, rows, width);
  }
#endif
}

void ropeRows(float* xp, const float* cosRows, const float* sinRows, size_t rows, size_t heads, size_t headDim, size_t rotaryDim) {
  const size_t half = rotaryDim / 2;
  for (size_t r = 0; r < rows; r++) {
    const float* c = cosRows + r * half;
    const float* sp = sinRows + r * half;
    for (size_t h = 0; h < heads; h++) {
      float* v = xp + (r * heads + h) * headDim;
      for (size_t i = 0; i < half; i++) {
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * sp[i];
        v[i + half] = x2 * c[i] + x1 * sp[i];
      }
    }
  }
}

}  // namespace ortllm
