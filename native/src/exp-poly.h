// The constants of the addon's vector exp (attention.cc's exp256 and exp512.h, for softmax, SiLU and GELU):
// exp(x) = 2^n * p(r) with x = n ln2 + r, |r| <= ln2/2, ln2 split in two parts so that
// r keeps its low bits, and p a degree-6 polynomial (relative error ~2e-7) evaluated as
// 1 + r + r^2 * (c[5] + r * (c[4] + ... + r * c[0])).
#pragma once

namespace ortllm::expPoly {

constexpr float kMin = -87.3f;  // below: exp underflows float32
constexpr float kMax = 88.3f;   // above: it overflows
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kCoeffs[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

}  // namespace ortllm::expPoly
