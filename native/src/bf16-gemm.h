// The bfloat16 GEMM, the encoder's residual LayerNorm and the encoder attention on AVX512-BF16
// (bf16-gemm.cc, bf16-encoder-attention.cc), free of N-API: addon-linear.cc binds them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ortllm {

constexpr int kBf16Activations = 4;  // bf16-tile.h's Activation codes: none, gelu, gelu_tanh, relu

// Whether this CPU runs them (AVX512-BF16); the functions below need it.
bool bf16Supported();

// Elements of a packed [n, k] weight.
size_t bf16PackedCount(int n, int k);

// w [n, k] row-major rounded to bfloat16 (nearest even) into out (bf16PackedCount elements).
void bf16Pack(const float* w, int n, int k, uint16_t* out);

// y[m, n] = act(x[m, k] W^T + bias); bias may be null.
void bf16Gemm(const uint16_t* packed, const float* x, const float* bias, float* y, int m, int n, int k, int act);

// out = LayerNorm(x + residual) * gamma + beta, rows of h (out may be x or residual).
void bf16AddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* out, int rows, int h, float eps);

// Bidirectional self-attention of padded sequences: qkv [batch * seq, 3 * hidden], sequence b's
// positions 0..lengths[b]-1 real; context [batch * seq, hidden] (padded rows zero).
void bf16EncoderAttention(const float* qkv, const int32_t* lengths, int batch, int seq, int heads, int hidden, float scale, float* context);

}  // namespace ortllm
