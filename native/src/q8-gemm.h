// The Q8_0 GEMM and the kernels the Q8_0 path runs beside it (q8-gemm.cc), free of N-API:
// addon-linear.cc reads a call's arguments and calls these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ortllm {

constexpr int kQ8Block = 32;  // Q8_0: K elements per scale

// Which kernel runs q8Gemm and q8SiluMul: the VNNI one where the CPU has it, else the AVX2 one.
enum class Q8Kernel { none, avx2, vnni };
Q8Kernel q8BestKernel();

// Bytes of a packed [n, k] weight (k a multiple of kQ8Block).
size_t q8PackedBytes(int n, int k);

// codes [n, k] (q + 128, row-major) and scales [n, k / 32] packed into out (q8PackedBytes).
void q8Pack(const uint8_t* codes, const float* scales, int n, int k, uint8_t* out);

// y[m, n] = x[m, k] W^T, x quantized per row and 32-block to int8; kernel not none.
void q8Gemm(Q8Kernel kernel, const uint8_t* packed, const float* x, float* y, int m, int n, int k);

// out[r, j] = silu(gu[r, j]) * gu[r, width + j] (geluTanh: gelu_tanh(gu[r, j]) * ...); kernel not none.
void q8SiluMul(Q8Kernel kernel, const float* gu, float* out, int rows, int width, bool geluTanh = false);

// In place: each head of each row rotated as RotaryEmbedding (interleaved 0) with its row's cos/sin.
// Only each head's first rotaryDim values rotate (pairs i, i + rotaryDim / 2); the rest pass through.
void ropeRows(float* x, const float* cosRows, const float* sinRows, size_t rows, size_t heads, size_t headDim, size_t rotaryDim);

}  // namespace ortllm
