// Paged causal attention over the runner's KV cache, read in place (no gather, no concat).
//
// Why native: onnxruntime-node can neither keep a tensor between runs nor alias an output to an
// input, so an ONNX graph reads the past only after gathering it into a fresh tensor (and
// attention ops concat again): at long contexts those copies dominate a decode step. This kernel
// reads each sequence's K/V rows straight from the cache blocks the block table names.
//
// Layout (the same as the runner's PagedKvCache): per layer one K and one V array of
// [numBlocks * blockSize, kvHeads * headDim] rows, float32, IEEE half or bfloat16 (Uint16Array),
// or 8-bit floats E4M3FN / E5M2 (Uint8Array; --kv-cache-dtype fp8 = fp8_e4m3, fp8_e5m2).
// Queries and outputs are the packed rows of a step: [numTokens, heads * headDim]; sequence s
// owns rows [first, first + count) at positions past .. past + count - 1 and attends to
// positions 0..its own.
//
// Each work item is (sequence, KV head, tile of query rows): the query heads sharing that KV
// head (GQA group) and the tile's rows all consume each K/V row once it is loaded (flash-style
// online softmax, fp32 accumulation). A decode step of a large batch (at least 4 sequences per
// thread, fewer than 4 query vectors per KV head, not a GQA decode that attend-prefill.inc takes)
// gives each item every KV head of its sequence instead, so whole cache rows are read in order.
// Items are spread over a small pool of threads that sleep between calls.
//
// The SIMD kernel (attend-simd.inc, built for AVX2/FMA/F16C and for AVX-512 F/BW/DQ/VL, the
// best the CPU has chosen at run time; setSimd picks a lower one) takes keys in spans of 256 whatever the
// block size: the span's cache rows are looked up once by walking the block table, every query
// vector scores the whole span, one online-softmax update per query and span (exp vectorised
// over the span, one rescale of the accumulator), then V is accumulated a few keys at a time,
// eight accumulator vectors per pass, so a pass reads each row's head slice whole (a 64-float
// slice in one pass at one query vector). Half and bfloat16 rows are widened in registers as
// they are loaded, each widened vector consumed at once (no accumulator spilled to the stack).
// Decodes (one query row per item) prefetch: each span's V rows while its K pass runs, the next
// span's K rows while its V pass runs, in spans of about 16 KB of K rows (16 to 256 keys), except
// float32 rows of 1 KB or more per item. At head size 8 with two or more query vectors per KV
// head, a decode scores eight keys per vector: their slices transposed in registers, shared by
// the group's query vectors, no horizontal sums. The AVX-512 build scores and accumulates head
// sizes 16-64 sixteen columns per instruction (a 64-column slice in four vectors, sixteen 16-bit
// values widened at once); elsewhere it runs the AVX2 code. On CPUs with AVX512-BF16 and VBMI,
// decodes of bfloat16 and 8-bit caches take attend-bf16.inc's kernels: keys scored with VDPBF16PS
// on the rows' bfloat16 words (8-bit codes looked up as bfloat16, exactly), the query split into
// three bfloat16 terms so scores keep float32 precision; at head size 8 four KV heads per vector
// (E4M3 only: bfloat16 and E5M2 rows run faster in attend-hd8.inc's float32 kernel). On AVX-512,
// head size 8 takes attend-hd8.inc: decodes of KV heads in fours four heads per float32 vector
// pair, prefill tiles with the item's query vectors across lanes.
// Prefill tiles (several query rows) and GQA decodes (several query heads per KV head) at head
// sizes that are multiples of 16 take attend-prefill.inc's AVX-512 kernel instead (register-blocked
// GEMMs, each K and V row loaded once for all the item's query vectors; figures there and below).
//
// How it was chosen (issue 16, "decode at depth"): CPU ms per decode step of the kernel alone
// (every layer: stories260K 5 x 8/4 heads hd 8, 100M 12 x 12 heads hd 64), batch 32, context
// 1024, one thread, a shared 2-core AMD Zen 5 machine (CPU time, as wall time moved 2x with its load):
//                                 stories f32  stories bf16   100M f32   100M bf16
//   cache never written (the kernel's arithmetic; what bench:forward read before it wrote every row)
//     before (16-key chunks, bf16 staged to float per chunk)   3.1-3.3      4.0-4.2      39-43      50-57
//     spans of 256 + bf16 widened in registers                 3.2          2.9          42         31
//     + block-table walk without a division per key            2.4          2.4          41         34
//       (and 4-8 multiply-add chains in the V pass)
//     + every KV head of a sequence in one decode item         1.9          1.9          36         28
//   cache filled with data (memory traffic counts)
//     before                                                   7.0-7.6      4.0-4.4      166-175    193-208
//     after                                                    ~5           ~3           112-120    155-162
// Measured and not kept: software prefetch of the next K/V rows (no gain filled, 15% loss on the
// unwritten cache); span sizes 32, 64, 128 (within noise of 256).
//
// 16-bit rows on a filled cache (100M: bf16 read at ~8 GB/s against ~21 GB/s for float32). What
// it was: the V pass took two eight-float columns per pass over sixteen keys, so a row's 64-float
// head slice was read in four passes, 32 (16-bit: 16) bytes from each of sixteen rows at a time;
// and with 16-bit rows the compiler kept one of the eight accumulators on the stack (each widened
// row needs a register: 8 accumulators + 7 widened rows + the broadcast weight), a store-to-load
// chain every key (perf annotate: `vfmadd213ps -0x3d0(%rbp)` then `vmovaps` back). Measured with
// `node dist/bench/attention-kernel.js --contexts 1024` (every layer's attention for a batch-32
// decode step, cache filled with random rows, one thread, CPU ms per step; two rounds each):
//                                                  100M f32     100M half    100M bf16
//     before                                       120-126      127-130      149-157
//     + a pass takes 8 accumulator vectors         120-125      93           105
//       (a 64-float slice whole at one query vector)
//     + each widened vector consumed at once       111-113      92-101       105-107
//       (no spill)
//     + 8 keys per V pass for 16-bit rows          (16 kept:    88           98-99
//       (float32: 8 keys 121, 32 keys 107-111)      within noise)
//   Final, before -> after, two interleaved rounds:
//     100M  float32 128 / 124 -> 117 / 124   half 127 / 129 -> 91 / 87   bf16 149 / 155 -> 108 / 96
//     stories260K (head size 8; the V pass there is unchanged, one column): float32 2.4 / 2.5 ->
//     2.5 / 2.4, half 1.9-2.0 -> 1.9-2.0, bf16 2.0-2.2 -> 2.1-2.2 (8 keys per pass cost 10% at
//     head size 8, so it applies from 32 columns on).
// Then 16-bit rows streamed at ~12 GB/s against float32's ~20; with the rows in L2/L3
// (--shared: every sequence on the same blocks) the same step costs 100M float32 35 ms, half 27, bf16 30, so
// the rest is memory stall, not arithmetic. Measured and not kept: software prefetch one and two
// 16-row blocks ahead (float32 20-30% slower, 16-bit within noise); 32 and 64 keys per V pass;
// madvise(MADV_HUGEPAGE) on the cache arrays (5-10% faster kernel-alone in two rounds, but no
// huge pages showed in /proc/meminfo and the whole runner did not move, so not taken).
//
// Decodes from memory, and head size 8 (second round of issue 16). bench/attention-kernel.ts used
// two caches for every shape: for stories260K at context 1024 those are 8.9 MB each and sat in the
// 32 MB LLC, so it timed the arithmetic while the runner (a cache per layer, 44 MB as float32)
// reads from memory; it now gives each layer its own cache up to 96 MB. This machine's VM exposes
// no hardware counters (perf stat: cycles, cache-misses "not supported"), so what follows is CPU
// time: a C++ harness calling attendItem on caches filled like the bench's, one cache per layer,
// one thread, CPU ms per batch-32 decode step, every layer, interleaved under the bench lock
// (each cell: runs of two or three rounds; the machine's memory is shared, so runs move 5-15%):
//                                       stories f32  stories half  100M half   100M f32   1.1B half
//   context 1024, no prefetch            4.9-5.8      2.2-3.0       92-115      108-115    162-164
//   + prefetch, T1 hint, 16 KB spans     2.5-3.2      2.1-2.7       92-101      114-120    130-136
//   at context 128, no prefetch -> prefetch: stories half 0.29-0.37 -> 0.30-0.34, 100M half 14.3-15.5 -> 13.3-14.4
//   (1.1B = TinyLlama's 22 layers of 32 query / 4 KV heads, hd 64; 1.1B float32 200-204 against
//   200-205: prefetched, within noise.) Stories260K float32 read its rows at 7.6 GB/s without
//   prefetch: its K and V passes each waited on memory, where the hardware prefetcher did not run
//   ahead of 128-byte rows. How it was tuned:
//     span bytes (K rows per span): stories f32 4-16 KB 2.5-2.7 ms, 32 KB 3.2, 160 KB (256 keys)
//       2.8; 100M half flat from 16 KB to 256 KB (92-104); 100M float32 prefetched: 16-64 KB
//       114-120, 128 KB 123, 256 KB 130-147 against 108-115 unprefetched (a 256-key span of its
//       3 KB rows is 768 KB of K plus as much V, more than the 1 MB L2), hence no prefetch there;
//     hint T0 against T1: equal for stories, 100M half 92-94 against 75-99 (T1 kept);
//     huge pages, this time real (aligned_alloc 2 MB + MADV_HUGEPAGE before the first write: 1.2 GB
//       AnonHugePages): 100M half 97 ms against 95 without, so the TLB is not the 16-bit stall;
//     the V pass of a span interleaved with the K pass of the next (both streams in flight at
//       once, scores double-buffered): 100M half 96-98 against 91-95, stories float32 4.9-5.9
//       against 2.6 (the next K then read on demand): not kept.
//   Keys across lanes at head size 8 (scores8x8: eight K slices transposed with 24 shuffles, then
//   8 multiply-adds per query vector, instead of 8 multiply-adds and a 9-instruction horizontal
//   sum per query vector), prefetch on, two rounds:
//     context 1024: float32 2.37 / 2.46 -> 2.05 / 2.22, half 2.06 / 2.12 -> 1.76 / 1.84,
//                   bfloat16 2.15 / 2.20 -> 1.68 / 1.68
//     context 128:  float32 0.31 / 0.31 -> 0.27 / 0.27, half 0.29 / 0.27 -> 0.24 / 0.28
//   The profile of stories260K (perf record -e cpu-clock, rows in L2) is flat: the kernel 92%, exp
//   3%, no instruction over 5%; about 7 cycles per (query, key) pair before this change.
//   AVX-512 (Zen 5, /proc/cpuinfo cpu family 26: 48 KB L1d, 512-bit operations at full width). The K pass
//   (scores8x16) and, at one query vector per KV head, the V pass (accumulateOne16) on 512-bit
//   vectors, the rest of the item code the same, compiled for AVX-512; same harness, two rounds:
//     100M context 1024: half 94.9 / 93.5 -> 78.3 / 75.6, float32 109.3 / 109.1 -> 81.7 / 86.1,
//                        bfloat16 103.6 / 104.2 -> 79.6 / 80.3
//     100M context 128:  half 10.9 / 12.2 -> 9.6 / 10.2
//   (The V pass must know its column count at compile time: with a run-time count its four
//   vectors went to the stack, 92 / 94 ms half / float32 against 84 / 87 templated.)
//   Half now streams at 15-16 GB/s (was 12-13) and float32 at 28-30 (was 22): part of the stall
//   was instructions per byte (fewer instructions keep more loads in flight), for both types;
//   16-bit rows still stream slower than float32 ones, the rest of why not found.
// Final, main -> this branch, `node dist/bench/attention-kernel.js --contexts 128,1024` (the bench
// with a cache per layer), one thread, CPU ms per batch-32 step at ctx 1024 (ctx 128), two
// interleaved rounds (the first under a load of 4-5 on the 2 cores, the second ~2):
//   stories260K  float32   5.83 / 5.14 -> 2.16 / 2.02   (0.36 / 0.30 -> 0.28 / 0.27)
//                half      3.01 / 2.61 -> 1.96 / 1.66   (0.30 / 0.27 -> 0.23 / 0.22)
//                bfloat16  3.16 / 2.79 -> 1.80 / 1.79   (0.33 / 0.28 -> 0.23 / 0.23)
//   100M         float32   120.7 / 111.5 -> 89.7 / 92.8  (15.3 / 12.8 -> 11.2 / 10.3)
//                half      100.7 / 92.7 -> 77.1 / 77.8   (11.6 / 8.1 -> 7.4 / 6.7)
//                bfloat16  112.3 / 107.9 -> 85.1 / 74.4  (12.4 / 10.7 -> 6.3 / 5.6)
// GQA decodes (fifth round of issue 16): with several query vectors per KV head (TinyLlama's 8)
// the AVX-512 build ran the SIMD item code's AVX2 parts: K rows widened and transposed one float
// at a time through a buffer, then AVX2's V pass, two vectors of 4 queries each re-reading the V
// rows. They now take attend-prefill.inc's tile kernel as a tile of one row: the group's query
// vectors share every K and V row loaded (widened once per 64-key block for 16- and 8-bit rows),
// for every KV type at levels avx512 and avx512bf16 (bfloat16 and 8-bit GQA decodes were not
// taken by attend-bf16.inc, which wants one query vector per KV head or head size 8). Two
// additions there: groups of up to 8 (4) query vectors hold 2 (4) dimensions of each query per
// lane group (the K pair broadcast by one 64-bit load), so a 512-bit multiply-add does 16 useful
// products instead of 8 (4); and decodes prefetch the next 64-key block's K and V rows, one row
// per row widened. Head size 8 (stories260K, 2 query vectors per KV head) keeps its SIMD path,
// whose K pass (scores8x8) and V pass (two queries per V row) already share each row loaded.
// `node dist/bench/attention-kernel.js --shapes 1.1B --kv <t> --contexts 128,1024` (one thread,
// CPU ms per batch-32 step, every layer), main -> this kernel, rounds in separate lock holds:
//              ctx 128                               ctx 1024
//   half       23.4-26.8 -> 9.8-15.5 (9 runs)        177-202 -> 100-109
//   float32    29.9-30.9 -> 10.4-18.6 (7 runs)       237-251 -> 150-167
//   bfloat16   23.7 / 20.4 -> 13.7 / 11.6            174 / 169 -> 103 / 102
//   fp8_e4m3   33.2 / 35.6 -> 9.8-15.4 (5 runs)      199 / 200 -> 74-80
//   (ctx 128 moves most with the other sessions' load; the base rounds alternate with these.)
// How the parts add up (half / float32, ctx 1024, same bench, rounds of alternating builds):
// routed through the tile kernel unchanged (one query per lane, 8 of 16 lanes idle in the K pass,
// no prefetch) 153-166 / 150-161; + prefetch 113-141 / 151-171; + two dimensions per lane group
// (this kernel) 100-109 / 150-167 (fp8_e4m3 85-87 -> 74). float32 rows gain nothing from the
// prefetch (as in the SIMD kernel: the hardware prefetcher streams them).
// Whole runner, `node dist/bench/forward.js --models 1b-gguf --contexts 128,1024 --batches 1,32
// --seconds 3 [--kv-cache-dtype float16]`, two interleaved rounds each, batch-32 steps/s (process
// CPU ms per step) at ctx 128 and ctx 1024, and their ratio (the target: >= 0.5):
//   float32   main 10.86 / 10.85 (180 / 181) and 4.36 / 5.04 (450 / 388), ratio 0.40 / 0.46
//             this 12.70 / 12.77 (154 / 153) and 6.99 / 6.97 (277 / 280), ratio 0.55 / 0.55
//   float16   main 11.40 / 11.00 (171 / 175) and 6.13 / 2.98 (320 / 301), ratio 0.54 / 0.27
//             this 12.49 / 11.87 (156 / 163) and 7.90 / 8.02 (247 / 243), ratio 0.63 / 0.68
// Batch 1 moved 30-50 steps/s between runs of either build (the step is the GEMMs': 1.1 GB of
// weights): no difference measurable. stories260K (same command): unchanged, as its code is,
// batch 32 at ctx 1024 433 / 443 against 453 / 465 steps/s (CPU 3.6 ms both). Served, `node
// dist/bench/serve.js --models 1b --prompts long --concurrency 1 --max-tokens 32 --repeat 1 --peer
// llama-server ...`, one run of this build: TPOT p50 38.3 ms against the runner's batch-1 step of
// 37.8 (ratio 1.01; 1.40 against its fastest step), output 1.97x llama-server's.
// Measured and not taken: items of all four KV heads of a sequence (whole rows read in order, as
// the SIMD kernel's wide decodes; each head's tile run in turn per block): half ctx 128 12.8 /
// 12.5 against 12.9 / 12.4, ctx 1024 102.0 / 101.9 against 104.9 / 101.5 (one thread); the
// prefetch 2 and 4 blocks ahead (127-128 and 129-132 ms against 107-108 one block ahead, 146
// without) and its hint (T0 95-103, T2 101, NTA 94-102 against T1 100: noise; T1 kept); the
// last block prefetching the first block of the sequence's next KV head (the next item): half ctx
// 1024 103-124 against 103-135, ctx 128 11.7-16.2 against 10.4-17.8, a loaded machine: no clear gain.
// Where ctx 1024 goes now (half): 738 MB of K/V per step read at ~7 GB/s; with the rows in L2/L3
// (--shared) the step costs 67-69 ms, and perf puts ~45% of the kernel on the loads of the
// widening loop, 15-22% on the K pass, 9-14% on the V pass. Not tried: the softmax on two keys per
// vector (half its lanes idle at 8 queries), widening K in registers instead of through kf.
// Still open: V at head size 8 with keys across lanes (8 accumulators per query vector) not tried.
//
// 8-bit rows (third round of issue 16: the 100M shape at context 1024 read 1.2 GB of 16-bit K/V
// per batch-32 step). vLLM's fp8 caches: --kv-cache-dtype fp8 and fp8_e4m3 are E4M3FN, fp8_e5m2
// E5M2, each value x stored as round-to-nearest-even(x / scale) saturated to the largest finite
// value (CUDA's __NV_SATFINITE; NaN stays NaN) with per-layer scales of 1.0 unless a checkpoint
// or --calculate-kv-scales gives others (here always 1.0). Reading: E5M2 is the upper byte of a
// half, so a byte shuffle (AVX-512: one vpshufb of the 16 bytes loaded into both 128-bit lanes;
// AVX2: unpack with zero) and F16C's conversion widen it; E4M3 shifts one bit right inside that
// byte (arithmetic shift, clear bit 14): the half then holds the value times 2^-8, normal and
// subnormal alike, folded into the score scale and the output's 1/l, and its NaN code (which
// would read 1.875) is replaced by a blend. Writing: floatToFp8's integer rounding on the float32
// bits (a count of subnormal steps below the smallest normal), eight at a time in AVX2.
// Not tried: a table lookup (no 16-bit gather; the bit moves above are 3 operations). Measured
// and not taken: E4M3 without the NaN blend (stories 2.1 -> 1.85 ms, 100M ctx 128 5.9 -> 4.9, ctx 1024 within
// noise: kept, as vLLM reads NaN as NaN); AVX-512 zero-extend + shift instead of the shuffle
// (100M e5m2 ctx 1024 48-49 -> 39-42 ms with the shuffle, e4m3 57 -> 53-54).
// `node dist/bench/attention-kernel.js --contexts 128,1024 --kv half,fp8_e4m3,fp8_e5m2,float32`,
// CPU ms per batch-32 step, one thread, ctx 1024 (ctx 128), rounds on a loaded machine:
//                   float32            half              fp8_e4m3              fp8_e5m2
//   stories260K     2.53-2.79 (0.29)   2.05-2.15 (0.24)  2.08-2.24 (0.28-0.31)  1.65-1.80 (0.23)
//   100M            90-98 (11-12)      89-96 (9-11)      53-57 (5.6-5.9)        39-42 (3.5)
// 100M fp8 moves 604 MB per step: e4m3 at ~11 GB/s, e5m2 ~15 (half ~13), against ~31 GB/s the
// machine's memory reads: the widening's instructions per byte, not the bytes, set the pace now
// (E4M3 takes 5 more operations per 16 values than E5M2). Whole runner, `node
// dist/bench/forward.js --models stories260K,100m-gguf --contexts 128,1024 --batches 32
// --seconds 3 --kv-cache-dtype <t>`, six interleaved rounds (load 3.6-8.6 on the 2 cores: wall
// time moved up to 3x, so the process's CPU ms per step, all threads, ctx 1024 / ctx 128 and
// their ratio, which is the steps/s ratio where the step is CPU-bound):
//   100M       float16   110-122 / 47-55    ratio 0.39-0.46
//              fp8_e4m3  89-92 / 45-50      ratio 0.50-0.56
//              fp8_e5m2  75-87 / 42-52      ratio 0.52-0.64
//   stories    float16   2.8-3.5 / 0.8-1.0  ratio 0.26-0.32
//              fp8_e4m3  2.8-3.4 / 0.8-1.2  ratio 0.26-0.36
//              fp8_e5m2  2.3-3.0 / 0.8-1.0  ratio 0.26-0.37
//   (wall steps/s ratios in those rounds scattered from 0.18 to 1.1 on the 100M model: the other
//   sessions' load, not the code. In two rounds at load 2-3.6 with the build before the AVX-512
//   shuffle: float16 0.40 / 0.40, fp8_e4m3 0.46 / 0.48, fp8_e5m2 0.47)
// Then main's VNNI GEMM (q8-gemm.cc) cut the 100M step's linears: ctx 128 fell to ~31 CPU ms, so
// the same bytes of attention weigh more. Two interleaved rounds after it (load 3.6-4.6):
//   100M       float16   97 / 31-32         ratio 0.32-0.33
//              fp8_e4m3  81 / 31            ratio 0.38-0.39
//              fp8_e5m2  66-70 / 26-28      ratio 0.38-0.43
// The 12 layers' attention at ctx 1024 (the step less ctx 128's ~27 ms outside attention) takes
// ~70 ms as half, ~54 as e4m3, ~42 as e5m2 (CPU, both threads); a ratio of 0.5 needs ~35: the
// 604 MB of fp8 rows at ~17 GB/s, about 1.5x E4M3's widening throughput today.
// stories260K (head size 8) does not gain: its step at ctx 1024 is the kernel's arithmetic, not
// the bytes (10 MB of fp8 K/V per step, read at ~5 GB/s). perf record -e cpu-clock of the kernel
// alone (e4m3, ctx 1024): the kernel 87%, flat; by region about 35% the K pass (widening eight
// bytes per row, the 8x8 transpose, 8 multiply-adds per query vector), 30% the V pass (a row's
// widening, 8 operations for E4M3, feeds only two multiply-adds: one per query vector), 25% the
// online softmax (one exp per query vector and key), 2.5% the block-table walk. Outside the
// kernel the step costs ~0.6 ms whatever the context, so ctx 1024 / ctx 128 stays ~0.3 until the
// kernel's cost per key falls about 2.5x. Not tried: widening two head-size-8 rows per
// instruction (AVX-512), which would halve the widening in both passes.
// AVX512-BF16 (fourth round of issue 16; attend-bf16.inc): taken for its speed (below), although it
// did not bring any KV type to the target (batch-32 decode at ctx 1024 >= 0.5x ctx 128 on
// both models). A fourth SIMD level for CPUs with AVX512-BF16 and VBMI, decodes of bfloat16 and
// 8-bit caches only; float32 and half caches (GGUF's default) keep the AVX-512 kernel. K pass: VDPBF16PS on the
// rows' bfloat16 words (bfloat16 rows as stored; 8-bit codes made bfloat16 by VPERMB + two masked
// VPERMI2B lookups + the sign, exact as every E4M3/E5M2 value is a bfloat16) against the query
// split into three bfloat16 terms (hi + mid + lo), so scores keep float32 precision: the 1e-5
// against float64 of native-attention.test held; q rounded to one bfloat16 (vLLM's CPU way)
// failed it on every case the kernel took, two terms passed. V pass: bfloat16 words to float32
// as even and odd columns (one shift or one AND per 16 values), float32 weights. Head size 8 with
// KV heads in fours: one 512-bit vector per row holds four heads' slices (a 128-bit lane per
// head); four keys transposed within lanes (8 shuffles) are scored for all four heads by one
// VDPBF16PS per pair and term; scores, the online softmax (16-lane exp) and the V pass's weights
// (one in-lane permute per key) stay in that layout.
// Kernel alone, `node dist/bench/attention-kernel.js --kv bfloat16,fp8_e4m3,fp8_e5m2 --contexts
// 128,1024 --simd avx512,avx512bf16` (same caches, one thread, CPU ms per batch-32 step, two
// rounds), ctx 1024 (ctx 128), avx512 -> avx512bf16:
//   stories260K  bfloat16  1.89 / 1.98 -> 0.92 / 0.98   (0.24 / 0.24 -> 0.13 / 0.14)
//                fp8_e4m3  2.22 / 2.21 -> 0.90 / 0.88   (0.29 / 0.28 -> 0.14 / 0.14)
//                fp8_e5m2  1.63 / 1.66 -> 0.85 / 0.86   (0.24 / 0.23 -> 0.14 / 0.14)
//   100M         bfloat16  96 / 95 -> 69 / 79           (7.6 / 7.7 -> 8.0 / 7.0)
//                fp8_e4m3  60 / 64 -> 41 / 49           (6.0 / 5.6 -> 4.5 / 4.4)
//                fp8_e5m2  not taken (below)
// Inside it, measured and not kept: 8-bit V rows through the lookup and the even/odd split (100M
// e4m3 ctx 1024 57 ms against 42 with the AVX-512 V pass); E5M2 K rows through it at head size 64
// (ctx 1024 48-60 ms against 48-54, ctx 128 4.3-4.8 against 3.4-3.7: its byte shuffle + F16C
// is already cheap); the lookup tables behind a function-local static (its guard per load: 100M e5m2
// 102 ms against 43); one query term (stories ~15% faster, fails 1e-5). Whole runner, `node
// dist/bench/forward.js --models stories260K,100m-gguf --contexts 128,1024 --batches 32 --seconds 3
// --kv-cache-dtype <t>`, three interleaved rounds (before/after in one lock hold, the third with
// the order reversed: the second run of a hold read up to 1.6x faster in wall time on unchanged
// code, load 1.7-7), process CPU ms ctx 128 / ctx 1024 and their ratio, before -> after:
//   stories  bfloat16  ratio 0.28-0.31 -> 0.36-0.43   (ctx 1024 2.78-2.83 -> 1.68-1.97 ms)
//            fp8_e4m3  ratio 0.28-0.29 -> 0.38-0.43   (3.15-3.68 -> 1.74-2.04)
//            fp8_e5m2  ratio 0.30-0.37 -> 0.38-0.49   (2.21-2.63 -> 1.50-2.26)
//   100M     bfloat16  ratio 0.30-0.33 -> 0.29-0.34   (94-112 -> 81-109)
//            fp8_e4m3  ratio 0.36-0.38 -> 0.39-0.43   (77-82 -> 65-68)
//            fp8_e5m2  ratio 0.37-0.45, code unchanged (kept the AVX-512 kernel)
//   (float16 / float32, code unchanged: stories 0.26-0.32, 100M 0.24-0.33.) Wall steps/s ratios of
//   the same runs: stories 0.20-0.47 -> 0.32-0.57, 100M 0.31-0.66 -> 0.32-0.45, within the load's noise.
//   Batch 1 (one round, --batches 1; stories' items then hold one KV head, so only 100M changed):
//   100M bfloat16 181 -> 211 steps/s at ctx 128, 128 -> 137 at ctx 1024; fp8_e4m3 203 -> 216, 168 -> 166.
// Why it stops short: 100M as bfloat16 reads 1.2 GB of K/V per step at ctx 1024, ~40 ms at the
// machine's ~31 GB/s, more than the ~30 ms a 0.5 ratio leaves; its 8-bit rows need E5M2's
// 42 ms of attention to fall to ~27 (E4M3 got to E5M2's cost, no lower). stories260K's step
// at ctx 1024 still costs 1.5-2.0 CPU ms, ~0.9 of it the kernel, against ~0.7 in all at ctx 128.
// Head size 8 on AVX-512 (sixth round of issue 16; attend-hd8.inc). stories260K's decode items
// (every KV head of a sequence) ran the AVX2 item code at head size 8: an 8x8 transpose per eight
// keys and query head pair, the softmax eight lanes wide per query vector, each V row widened for
// two multiply-adds; perf put the kernel's time about evenly on K pass, softmax and V pass. Now:
// four KV heads per float32 vector pair, four keys transposed within 128-bit lanes, the softmax
// 16 lanes wide (attendQuads' layout, shared), the V pass a key's per-head weight broadcast in
// lane; the first span's K rows prefetched up front (the others already were, a span ahead).
// Prefill tiles: the item's query vectors across lanes (queries x keys as a GEMM with the eight
// dimensions broadcast), instead of the AVX2 tile code's 16-key transposes through memory.
// `node dist/bench/attention-kernel.js --shapes stories260K --contexts 128,1024` (one thread, CPU
// ms per batch-32 decode step, every layer), main -> this, two interleaved rounds:
//                 ctx 1024                          ctx 128
//   float32       2.31 / 2.45 -> 2.07 / 1.71        0.30 / 0.30 -> 0.15 / 0.15
//   half          1.95 / 2.02 -> 0.87 / 0.92        0.24 / 0.24 -> 0.11 / 0.11
//   bfloat16      0.94 / 0.98 -> 0.80 / 0.83        0.14 / 0.14 -> 0.11 / 0.11
//   fp8_e5m2      0.87 / 0.87 -> 0.78 / 0.79        0.14 / 0.14 -> 0.11 / 0.11
//   fp8_e4m3      0.87 / 0.89 -> 0.93 / 0.90 (unchanged: attendQuads on AVX512-BF16)
// Against attendQuads on the same build (--simd avx512,avx512bf16, three rounds, ctx 1024):
// bfloat16 0.87-0.94 against 0.99-1.22, E5M2 0.76-0.80 against 0.89-0.96, E4M3 1.07-1.11 against
// 0.87-0.97 (E4M3's widening is 8 operations per 16 values in float32, 4 per 32 by the bfloat16
// lookup), hence E4M3 alone keeps attendQuads there. Measured and taken: the first span's K
// prefetch, half 0.92 / 0.93 -> 0.77 / 0.77, bfloat16 0.81 / 0.84 -> 0.78 / 0.79; not taken in
// attendQuads (E4M3 0.90 / 0.87 against 0.90 / 0.88). Prefill (--prefill: one prompt per step,
// every layer): 700 tokens float32 9.95 / 9.78 -> 3.95 / 3.94 ms, half 9.55 / 9.62 -> 3.66 / 3.68;
// 1024 tokens float32 20.0 / 20.2 -> 8.3 / 8.3, half 19.7 / 20.0 -> 7.6 / 7.7. Computing each
// span's exps before its V pass instead of feeding each exp to its multiply-adds: within noise.
// Whole runner, `node dist/bench/forward.js --models stories260K --contexts 128,1024 --batches 32
// --seconds 3 --kv-cache-dtype <t>`, two rounds of main and this build alternating (load 2-10 on
// the 2 cores, so wall steps/s moved up to 1.5x between rounds): process CPU ms per batch-32 step
// at ctx 128 / ctx 1024, their ratio (steps/s ratio where CPU-bound), and the wall steps/s ratio:
//   float16   main 0.96 / 2.71, 0.81 / 2.89 (0.35, 0.28; wall 0.30, 0.29)
//             this 0.78 / 1.48, 0.76 / 1.86 (0.53, 0.41; wall 0.41, 0.37)
//   bfloat16  main 0.77 / 2.23, 0.74 / 1.86 (0.35, 0.40; wall 0.32, 0.35)
//             this 0.69 / 1.56, 0.79 / 1.55 (0.44, 0.51; wall 0.49, 0.64)
//   fp8_e5m2  main 0.70 / 1.77, 0.83 / 1.58 (0.40, 0.53; wall 0.45, 0.41)
//             this 0.69 / 1.34, 0.73 / 1.51 (0.51, 0.48; wall 0.48, 0.43)
//   fp8_e4m3  main 0.74 / 1.68, 0.68 / 1.61 (0.44, 0.42); this 0.69 / 1.57, 0.75 / 1.57 (0.44,
//             0.48): its decode kernel is main's.
// The same runs' 1024-token prefill: 26.4-29.3 CPU ms on main, 13.1-15.5 here. At ctx 1024 the
// kernel is ~0.8 of a ~1.5 ms step; what is left outside it (~0.65 ms) is the ctx-128 step's,
// so a steady 0.5 needs the kernel near 0.65 ms, about what its 21 MB of 16-bit K/V per step take
// at the ~30 GB/s this machine streams. Served, `node dist/bench/serve.js --models stories
// --prompts long --concurrency 1,32 --max-tokens 64 --repeat 1 --peer none` (float32 cache, the
// default), main -> this, two rounds (the second in reverse order): out tok/s c1 1303 / 1180 ->
// 1558 / 1529, c32 2086 / 2220 -> 3350 / 3180 (gain 1.60 / 1.88 -> 2.15 / 2.08), TTFT p50 18.8 /
// 19.2 -> 12.5 / 13.2 ms, runner-alone prefill 42.9k / 43.5k -> 56.1k / 68.6k tok/s, runner-alone
// batch-32 decode 16.3k / 16.5k -> 29.9k / 28.4k tok/s.
// Whole runner (npm run bench:forward, batch 32, ctx1024/ctx128 steps per second), earlier
// rounds: see src/model/graph/decoder-graph.ts.

#include <node_api.h>

#include "bf16-scalar.h"
#include "exp-poly.h"
#include "exp512.h"
#include "napi-args.h"
#include "thread-pool.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_X86 1
#endif

namespace ortllm {
napi_value Argmax(napi_env env, napi_callback_info info);  // argmax.cc: the greedy sampler's argmax
napi_value FreeBuffers(napi_env env, napi_callback_info info);  // free-buffers.cc: frees dead step buffers now
napi_value Q8Pack(napi_env env, napi_callback_info info);  // q8-gemm.cc: Q8_0 weights packed for q8Gemm
napi_value Q8Gemm(napi_env env, napi_callback_info info);  // q8-gemm.cc: y = x W^T on AVX512-VNNI
napi_value SiluMul(napi_env env, napi_callback_info info);  // q8-gemm.cc: SwiGLU of a gate_up output
napi_value Rope(napi_env env, napi_callback_info info);     // q8-gemm.cc: RoPE of q/k rows in place
napi_value Q8Available(napi_env env);                      // q8-gemm.cc: whether q8Gemm runs on this CPU
napi_value Bf16Pack(napi_env env, napi_callback_info info);      // bf16-gemm.cc: float32 weights packed as bfloat16 for bf16Gemm
napi_value Bf16Gemm(napi_env env, napi_callback_info info);      // bf16-gemm.cc: y = act(x W^T + b) on AVX512-BF16
napi_value AddLayerNorm(napi_env env, napi_callback_info info);  // bf16-gemm.cc: LayerNorm(x + residual)
napi_value Bf16EncoderAttention(napi_env env, napi_callback_info info);  // bf16-encoder-attention.cc: encoder self-attention on AVX512-BF16
napi_value Bf16Available(napi_env env);                          // bf16-gemm.cc: whether bf16Gemm runs on this CPU
napi_value AddRmsNorm(napi_env env, napi_callback_info info);    // rms-norm.cc: RMSNorm(x + residual), the sum kept
}  // namespace ortllm

namespace {

using ortllm::bf16ToFloat;
using ortllm::floatToBf16;

struct Shape {
  int numHeads;
  int numKvHeads;
  int headDim;
  int blockSize;
  float scale;
};

// What the cache arrays hold: float32, IEEE half, bfloat16 (the upper half of a float32), or one of
// the two OCP 8-bit floats (--kv-cache-dtype fp8_e4m3 / fp8_e5m2, vLLM's fp8 caches at scale 1.0):
// E4M3FN (bias 7, no infinities, NaN = S.1111.111, max finite 448) and E5M2 (bias 15, IEEE-like,
// max finite 57344; the upper byte of an IEEE half).
enum KvType { kF32 = 0, kF16 = 1, kBF16 = 2, kE4M3 = 3, kE5M2 = 4 };

// Bytes per cache element.
template <KvType T>
constexpr size_t kvBytes() {
  return T == kF32 ? 4 : T == kF16 || T == kBF16 ? 2 : 1;
}

struct Call {
  const float* q;
  float* out;
  const void* k;
  const void* v;
  KvType kvType;
  const int32_t* seqs;  // per sequence: first row, row count, past length, offset into tables
  const int32_t* tables;
  Shape shape;
};

struct Item {
  int seq;
  int kvHead;  // the first of `heads` consecutive KV heads
  int row0;
  int rows;
  int heads;
};

constexpr int kMaxQueries = 32;  // query vectors (group heads x tile rows) per work item
constexpr int kMaxHeadDim = 256;
constexpr int kKeyChunk = 16;    // portable kernel: keys scored together before the softmax update
constexpr int kSpan = 256;       // SIMD kernels: keys scored together before the softmax update
constexpr int kPrefetchSpanBytes = 16 * 1024;  // SIMD kernels, prefetching decodes: K bytes per span

// A SIMD work item's buffers (about 100 KB): one set per thread, kept between calls.
struct Scratch {
  alignas(64) float acc[kMaxQueries][kMaxHeadDim];
  alignas(64) float score[kMaxQueries][kSpan];
  alignas(64) float kt[kMaxHeadDim * 16];
  alignas(64) float rows[16 * kMaxHeadDim];
  alignas(64) float m[kMaxQueries];
  alignas(64) float l[kMaxQueries];
  size_t at[kSpan + 16];
  size_t atNext[kSpan + 16];
};

Scratch& scratch() {
  thread_local std::unique_ptr<Scratch> s(new Scratch());
  return *s;
}

// ---------------------------------------------------------------- half <-> float (portable)
inline float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while ((man & 0x400) == 0);
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    man |= 0x800000;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
  return (uint16_t)half;
}

// ---------------------------------------------------------------- generic kernel
// Each query vector of a work item (head-major, then row, then group member): its row in q, the last key it may see (causal), and the
// online-softmax state (running max, sum, accumulator) reset.
inline void startQueries(const Call& c, const Item& it, int group, int past, const float** qp, int* limit, float* m,
                         float* l, float (*acc)[kMaxHeadDim]) {
  const Shape& s = c.shape;
  const int hd = s.headDim;
  const size_t qStride = (size_t)s.numHeads * hd;
  const int first = c.seqs[4 * it.seq];
  const int qh = group * it.rows;
  for (int i = 0; i < qh * it.heads; i++) {
    int r = it.row0 + i % qh / group, g = i % group;
    qp[i] = c.q + (size_t)(first + r) * qStride + (size_t)((it.kvHead + i / qh) * group + g) * hd;
    limit[i] = past + r;
    m[i] = -INFINITY;
    l[i] = 0;
    for (int d = 0; d < hd; d++) acc[i][d] = 0;
  }
}

template <typename Load>
void attendGeneric(const Call& c, const Item& it, Load load) {
  const Shape& s = c.shape;
  const int hd = s.headDim;
  const int group = s.numHeads / s.numKvHeads;
  const int kvStride = s.numKvHeads * hd;
  const int qStride = s.numHeads * hd;
  const int32_t* info = c.seqs + 4 * it.seq;
  const int first = info[0], past = info[2];
  const int32_t* table = c.tables + info[3];
  const int nq = group * it.rows;
  float m[kMaxQueries], l[kMaxQueries], acc[kMaxQueries][kMaxHeadDim], kv[kMaxHeadDim];
  float score[kMaxQueries][kKeyChunk];
  const float* qp[kMaxQueries];
  int limit[kMaxQueries];
  startQueries(c, it, group, past, qp, limit, m, l, acc);
  const int keys = past + it.row0 + it.rows;
  for (int j0 = 0; j0 < keys; j0 += kKeyChunk) {
    const int n = keys - j0 < kKeyChunk ? keys - j0 : kKeyChunk;
    for (int jj = 0; jj < n; jj++) {
      int pos = j0 + jj;
      size_t row = (size_t)table[pos / s.blockSize] * s.blockSize + pos % s.blockSize;
      load(c.k, row * kvStride + (size_t)it.kvHead * hd, hd, kv);
      for (int i = 0; i < nq; i++) {
        float dot = 0;
        for (int d = 0; d < hd; d++) dot += qp[i][d] * kv[d];
        score[i][jj] = pos <= limit[i] ? dot * s.scale : -INFINITY;
      }
    }
    for (int i = 0; i < nq; i++) {
      float mx = m[i];
      for (int jj = 0; jj < n; jj++) mx = score[i][jj] > mx ? score[i][jj] : mx;
      if (mx == -INFINITY) continue;
      float corr = std::exp(m[i] - mx);
      m[i] = mx;
      l[i] *= corr;
      for (int d = 0; d < hd; d++) acc[i][d] *= corr;
      for (int jj = 0; jj < n; jj++) {
        float p = std::exp(score[i][jj] - mx);
        score[i][jj] = p;
        l[i] += p;
      }
    }
    for (int jj = 0; jj < n; jj++) {
      int pos = j0 + jj;
      size_t row = (size_t)table[pos / s.blockSize] * s.blockSize + pos % s.blockSize;
      load(c.v, row * kvStride + (size_t)it.kvHead * hd, hd, kv);
      for (int i = 0; i < nq; i++) {
        float p = score[i][jj];
        if (p == 0) continue;
        for (int d = 0; d < hd; d++) acc[i][d] += p * kv[d];
      }
    }
  }
  for (int i = 0; i < nq; i++) {
    int r = it.row0 + i / group, g = i % group;
    float* o = c.out + (size_t)(first + r) * qStride + (size_t)(it.kvHead * group + g) * hd;
    float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
    for (int d = 0; d < hd; d++) o[d] = acc[i][d] * inv;
  }
}

void loadF32(const void* base, size_t at, int n, float* dst) { std::memcpy(dst, (const float*)base + at, n * sizeof(float)); }
// n elements of a 16- or 8-bit cache from element `at`, widened to float32 by Decode.
template <typename T, float (*Decode)(T)>
void loadDecoded(const void* base, size_t at, int n, float* dst) {
  const T* p = (const T*)base + at;
  for (int i = 0; i < n; i++) dst[i] = Decode(p[i]);
}

// ---------------------------------------------------------------- 8-bit floats (scalar)
// Decoding: exact (every 8-bit value is a float32). E4M3FN has no infinities: S.1111.111 is NaN.
inline float e4m3ToFloat(uint8_t b) {
  const int e = (b >> 3) & 0xf, m = b & 7;
  float mag = e == 15 && m == 7 ? NAN : e == 0 ? std::ldexp((float)m, -9) : std::ldexp((float)(8 + m), e - 10);
  return b & 0x80 ? -mag : mag;
}

inline float e5m2ToFloat(uint8_t b) { return halfToFloat((uint16_t)(b << 8)); }

// Encoding as vLLM's CUDA caches do (__nv_cvt_float_to_fp8 with __NV_SATFINITE): round to nearest
// even, magnitudes past the largest finite value (infinities included) saturate to it, NaN stays
// NaN (0x7f: a NaN in both formats), the sign is kept (-0 included). M mantissa bits, exponent
// bias B, MAXCODE the largest finite magnitude's code. Normal results round on the float32 bits
// (carries run into the exponent); subnormal ones (uniform steps of 2^(1-B-M)) as an integer
// count of steps, which may round up to the smallest normal (code 2^M). The AVX2 version below
// computes the same thing eight at a time.
template <int M, int B, int MAXCODE>
inline uint8_t floatToFp8(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint8_t sign = (uint8_t)((x >> 24) & 0x80);
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return 0x7f;
  int32_t code;
  if (abs >= (uint32_t)(128 - B) << 23) {
    constexpr int shift = 23 - M;
    code = (int32_t)((abs + (1u << (shift - 1)) - 1 + ((abs >> shift) & 1)) >> shift) - ((127 - B) << M);
  } else {
    float a;
    std::memcpy(&a, &abs, 4);
    code = (int32_t)std::nearbyint(a * std::ldexp(1.0f, B - 1 + M));
  }
  return (uint8_t)(sign | std::min(code, MAXCODE));
}

inline uint8_t floatToE4M3(float f) { return floatToFp8<3, 7, 0x7e>(f); }
inline uint8_t floatToE5M2(float f) { return floatToFp8<2, 15, 0x7b>(f); }

#ifdef ORTLLM_X86
// ---------------------------------------------------------------- AVX2 + FMA + F16C kernel
#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

AVX2_FN inline __m256 exp256(__m256 x) {
  // exp-poly.h's exp: 2^n built in the exponent bits, 0 below kMin.
  using namespace ortllm::expPoly;
  const __m256 lo = _mm256_set1_ps(kMin);
  __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_max_ps(x, lo);
  x = _mm256_min_ps(x, _mm256_set1_ps(kMax));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kCoeffs[0]);
  for (int i = 1; i < 6; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kCoeffs[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(underflow, y);
}

AVX2_FN inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Eight dot products a[k] . b (lanes summed) as one vector [sum a0, ..., sum a7].
AVX2_FN inline __m256 reduce8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5, __m256 a6, __m256 a7) {
  __m256 s01 = _mm256_hadd_ps(a0, a1), s23 = _mm256_hadd_ps(a2, a3);
  __m256 s45 = _mm256_hadd_ps(a4, a5), s67 = _mm256_hadd_ps(a6, a7);
  __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
  // s0123 = [a0lo a1lo a2lo a3lo | a0hi a1hi a2hi a3hi] (each a half-sum); same for s4567.
  __m256 lo = _mm256_permute2f128_ps(s0123, s4567, 0x20), hi = _mm256_permute2f128_ps(s0123, s4567, 0x31);
  return _mm256_add_ps(lo, hi);
}

// Eight 8-bit floats as IEEE halves (eight 16-bit lanes). E5M2 is a half's upper byte. E4M3FN's
// fields move one bit right inside the upper byte (S.EEEE.MMM -> S.0EEEE.MMM0000000): the half then
// holds the value times 2^-8 (normal and subnormal alike), which the kernel folds into its score
// scale and output (fp8Factor), and its NaN S.1111.111 (which would read as 1.875) is replaced by
// a half NaN (the sign of a NaN carries nothing).
template <KvType T>
AVX2_FN inline __m128i fp8ToHalves(__m128i bytes) {
  const __m128i h = _mm_unpacklo_epi8(_mm_setzero_si128(), bytes);
  if constexpr (T == kE5M2) return h;
  const __m128i moved = _mm_and_si128(_mm_srai_epi16(h, 1), _mm_set1_epi16((short)0xbfff));
  const __m128i nan = _mm_cmpeq_epi16(_mm_slli_epi16(moved, 1), _mm_set1_epi16(0x7f00));  // the magnitude, shifted past the sign
  return _mm_blendv_epi8(moved, _mm_set1_epi16(0x7e00), nan);
}

// What the SIMD kernels' widened values are short of the stored ones by (see fp8ToHalves).
template <KvType T>
constexpr float fp8Factor() {
  return T == kE4M3 ? 256.0f : 1.0f;
}

template <KvType T>
AVX2_FN inline __m256 load8(const void* base, size_t at) {
  if constexpr (T == kF32) {
    return _mm256_loadu_ps((const float*)base + at);
  } else if constexpr (T == kE4M3 || T == kE5M2) {
    return _mm256_cvtph_ps(fp8ToHalves<T>(_mm_loadl_epi64((const __m128i*)((const uint8_t*)base + at))));
  } else {
    const __m128i raw = _mm_loadu_si128((const __m128i*)((const uint16_t*)base + at));
    if constexpr (T == kF16) return _mm256_cvtph_ps(raw);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
}

AVX2_FN inline float hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Scores of IB query vectors against 16 keys stored transposed (kt[d * 16 + key]): broadcast one
// query element, two key vectors, 2 * IB multiply-adds per step, no reductions.
template <int IB>
AVX2_FN inline void scoresTransposed(const float* const* qp, const float* kt, int hd, float scale, float* const* score) {
  __m256 a0[IB], a1[IB];
  for (int b = 0; b < IB; b++) a0[b] = a1[b] = _mm256_setzero_ps();
  for (int d = 0; d < hd; d++) {
    const __m256 k0 = _mm256_load_ps(kt + d * 16), k1 = _mm256_load_ps(kt + d * 16 + 8);
    for (int b = 0; b < IB; b++) {
      const __m256 q = _mm256_broadcast_ss(qp[b] + d);
      a0[b] = _mm256_fmadd_ps(q, k0, a0[b]);
      a1[b] = _mm256_fmadd_ps(q, k1, a1[b]);
    }
  }
  const __m256 sc = _mm256_set1_ps(scale);
  for (int b = 0; b < IB; b++) {
    _mm256_store_ps(score[b], _mm256_mul_ps(a0[b], sc));
    _mm256_store_ps(score[b] + 8, _mm256_mul_ps(a1[b], sc));
  }
}

// The cache viewed from `elements` further on (another KV head's columns).
template <KvType T>
inline const void* shifted(const void* base, size_t elements) {
  return (const char*)base + elements * kvBytes<T>();
}

// Eight keys' scores for one query vector: eight dot products, one reduction.
template <KvType T>
AVX2_FN inline __m256 scores8(const float* q, const void* k, const size_t* at, int vecs) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int v = 0; v < vecs; v++) {
    const __m256 qv = _mm256_loadu_ps(q + 8 * v);
    a0 = _mm256_fmadd_ps(qv, load8<T>(k, at[0] + 8 * v), a0);
    a1 = _mm256_fmadd_ps(qv, load8<T>(k, at[1] + 8 * v), a1);
    a2 = _mm256_fmadd_ps(qv, load8<T>(k, at[2] + 8 * v), a2);
    a3 = _mm256_fmadd_ps(qv, load8<T>(k, at[3] + 8 * v), a3);
    a4 = _mm256_fmadd_ps(qv, load8<T>(k, at[4] + 8 * v), a4);
    a5 = _mm256_fmadd_ps(qv, load8<T>(k, at[5] + 8 * v), a5);
    a6 = _mm256_fmadd_ps(qv, load8<T>(k, at[6] + 8 * v), a6);
    a7 = _mm256_fmadd_ps(qv, load8<T>(k, at[7] + 8 * v), a7);
  }
  return reduce8(a0, a1, a2, a3, a4, a5, a6, a7);
}

// acc[b] += sum_j p[b][j] * V[j] for IB query vectors over W (1 or 2) eight-float columns at v0.
// U independent sums over alternating keys: with few columns and queries a single chain of
// multiply-adds would wait on its own latency every key.
template <KvType T, int IB, int W, int U>
AVX2_FN inline void accumulateValues(float (*acc)[kMaxHeadDim], float* const* p, const void* vCache, const size_t* at, int n, int v0) {
  __m256 r[U][IB][W];
  for (int b = 0; b < IB; b++)
    for (int w = 0; w < W; w++) {
      r[0][b][w] = _mm256_load_ps(acc[b] + 8 * (v0 + w));
      for (int u = 1; u < U; u++) r[u][b][w] = _mm256_setzero_ps();
    }
  int j = 0;
  for (; j + U <= n; j += U)
    for (int u = 0; u < U; u++) {
      if constexpr (IB == 1) {  // widen and consume each column at once: no temporaries live
        const __m256 pb = _mm256_broadcast_ss(p[0] + j + u);
        for (int w = 0; w < W; w++) r[u][0][w] = _mm256_fmadd_ps(pb, load8<T>(vCache, at[j + u] + 8 * (v0 + w)), r[u][0][w]);
        continue;
      }
      __m256 v[W];
      for (int w = 0; w < W; w++) v[w] = load8<T>(vCache, at[j + u] + 8 * (v0 + w));
      for (int b = 0; b < IB; b++) {
        const __m256 pb = _mm256_broadcast_ss(p[b] + j + u);
        for (int w = 0; w < W; w++) r[u][b][w] = _mm256_fmadd_ps(pb, v[w], r[u][b][w]);
      }
    }
  for (; j < n; j++) {
    __m256 v[W];
    for (int w = 0; w < W; w++) v[w] = load8<T>(vCache, at[j] + 8 * (v0 + w));
    for (int b = 0; b < IB; b++) {
      const __m256 pb = _mm256_broadcast_ss(p[b] + j);
      for (int w = 0; w < W; w++) r[0][b][w] = _mm256_fmadd_ps(pb, v[w], r[0][b][w]);
    }
  }
  for (int b = 0; b < IB; b++)
    for (int w = 0; w < W; w++) {
      for (int u = 1; u < U; u++) r[0][b][w] = _mm256_add_ps(r[0][b][w], r[u][b][w]);
      _mm256_store_ps(acc[b] + 8 * (v0 + w), r[0][b][w]);
    }
}

// Keys j0 .. j0 + n (a few, so their V rows stay in L1 while each column group reads them); about
// eight independent multiply-add chains whatever the number of query vectors (IB) and columns.
template <KvType T, int IB>
AVX2_FN inline void accumulateBlock(float (*acc)[kMaxHeadDim], float* const* p, int j0, const void* vCache, const size_t* at, int n, int vecs) {
  constexpr int W = 8 / IB;  // columns per pass: eight chains, each row's slice read whole
  float* pj[IB];
  for (int b = 0; b < IB; b++) pj[b] = p[b] + j0;
  int v0 = 0;
  for (; v0 + W <= vecs; v0 += W) accumulateValues<T, IB, W, 1>(acc, pj, vCache, at + j0, n, v0);
  if constexpr (W >= 4)
    if (v0 + W / 2 <= vecs) accumulateValues<T, IB, W / 2, 2>(acc, pj, vCache, at + j0, n, v0), v0 += W / 2;
  if constexpr (W >= 2)
    if (v0 + 2 <= vecs) accumulateValues<T, IB, 2, W / 2>(acc, pj, vCache, at + j0, n, v0), v0 += 2;
  if (v0 < vecs) accumulateValues<T, IB, 1, W>(acc, pj, vCache, at + j0, n, v0);
}

// Head size 8: scores of the `qn` query vectors qp[0..qn) against eight keys, the keys' slices
// transposed in registers (one vector per dimension, keys across lanes), so the group's queries
// share one transpose and no horizontal reduction runs.
template <KvType T>
AVX2_FN inline void scores8x8(const float* const* qp, int qn, const void* k, const size_t* at, __m256 scale, float* const* score, int jj) {
  const __m256 r0 = load8<T>(k, at[0]), r1 = load8<T>(k, at[1]), r2 = load8<T>(k, at[2]), r3 = load8<T>(k, at[3]);
  const __m256 r4 = load8<T>(k, at[4]), r5 = load8<T>(k, at[5]), r6 = load8<T>(k, at[6]), r7 = load8<T>(k, at[7]);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5), t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE), u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE), u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  const __m256 d0 = _mm256_permute2f128_ps(u0, u4, 0x20), d1 = _mm256_permute2f128_ps(u1, u5, 0x20), d2 = _mm256_permute2f128_ps(u2, u6, 0x20), d3 = _mm256_permute2f128_ps(u3, u7, 0x20);
  const __m256 d4 = _mm256_permute2f128_ps(u0, u4, 0x31), d5 = _mm256_permute2f128_ps(u1, u5, 0x31), d6 = _mm256_permute2f128_ps(u2, u6, 0x31), d7 = _mm256_permute2f128_ps(u3, u7, 0x31);
  for (int b = 0; b < qn; b++) {
    const float* q = qp[b];
    __m256 a = _mm256_mul_ps(_mm256_broadcast_ss(q), d0), c = _mm256_mul_ps(_mm256_broadcast_ss(q + 1), d1);
    a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 2), d2, a);
    c = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 3), d3, c);
    a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 4), d4, a);
    c = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 5), d5, c);
    a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 6), d6, a);
    c = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 7), d7, c);
    _mm256_store_ps(score[b] + jj, _mm256_mul_ps(_mm256_add_ps(a, c), scale));
  }
}

// Where the rows of keys j0 .. j0 + n (n > 0) start in the cache, walking the block table (no
// division per key: it costs more than a key's dot product at head size 8); the padding keys up
// to a multiple of 8 (and 8 more) re-read the last row.
inline void spanRows(const Shape& s, const int32_t* table, size_t kvStride, size_t head, int j0, int n, size_t* at) {
  for (int jj = 0, blk = j0 / s.blockSize, in = j0 % s.blockSize; jj < n; blk++, in = 0) {
    const int end = jj + std::min(s.blockSize - in, n - jj);
    size_t row = ((size_t)table[blk] * s.blockSize + in) * kvStride + head;
    for (; jj < end; jj++, row += kvStride) at[jj] = row;
  }
  const int padded = (n + 7) & ~7;
  for (int jj = n; jj < padded + 8; jj++) at[jj] = at[n - 1];
}

// Asks for the cache lines of rows at[0 .. n) (`bytes` from each row's start) ahead of use. The
// T1 hint: into L2 (measured against T0: equal at head size 8, better for 16-bit rows of the 100M
// shape, where T0's lines were pushed out of L1 before their pass read them).
template <KvType T>
AVX2_FN inline void prefetchRows(const void* base, const size_t* at, int n, size_t bytes) {
  for (int j = 0; j < n; j++) {
    const char* p = (const char*)base + at[j] * kvBytes<T>();
    const char* end = p + bytes;
    for (p = (const char*)((uintptr_t)p & ~(uintptr_t)63); p < end; p += 64) _mm_prefetch(p, _MM_HINT_T1);
  }
}

#define ATTEND_TARGET AVX2_FN
#define ATTEND_NAME attendAvx2
#define ATTEND_512 0
#define ATTEND_DOT 0
#include "attend-simd.inc"
#undef ATTEND_TARGET
#undef ATTEND_NAME
#undef ATTEND_512
#include "attend-hd8-avx2.inc"

// ---------------------------------------------------------------- AVX-512 (F, BW, DQ, VL) passes
// Sixteen columns per instruction: a 64-column head slice is four vectors, and sixteen 16-bit
// values are widened per instruction, so 16-bit rows take float32's instructions per byte under
// AVX2. Chosen at run time like the AVX2 kernel (attendAvx512 compiles the same item code for
// this target, adding these passes at head sizes 16, 32, 48 and 64).
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))

template <KvType T>
AVX512_FN inline __m512 load16(const void* base, size_t at) {
  if constexpr (T == kF32) {
    return _mm512_loadu_ps((const float*)base + at);
  } else if constexpr (T == kE4M3 || T == kE5M2) {
    // Sixteen bytes into the upper bytes of sixteen 16-bit lanes with one in-lane shuffle of the
    // bytes loaded into both halves (lane 0 takes bytes 0-7, lane 1 bytes 8-15).
    const __m256i spread = _mm256_setr_epi8(-1, 0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1, 8, -1, 9, -1, 10, -1, 11, -1, 12, -1, 13, -1, 14, -1, 15);
    const __m256i h = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)((const uint8_t*)base + at))), spread);
    if constexpr (T == kE5M2) return _mm512_cvtph_ps(h);
    // fp8ToHalves' E4M3 move, its NaN found as a mask (the magnitude shifted past the sign) and
    // replaced by a half NaN.
    const __m256i moved = _mm256_and_si256(_mm256_srai_epi16(h, 1), _mm256_set1_epi16((short)0xbfff));
    const __mmask16 nan = _mm256_cmpeq_epi16_mask(_mm256_slli_epi16(moved, 1), _mm256_set1_epi16(0x7f00));
    return _mm512_cvtph_ps(_mm256_mask_blend_epi16(nan, moved, _mm256_set1_epi16(0x7e00)));
  } else {
    const __m256i raw = _mm256_loadu_si256((const __m256i*)((const uint16_t*)base + at));
    if constexpr (T == kF16) return _mm512_cvtph_ps(raw);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  }
}

AVX512_FN inline __m256 foldHalves(__m512 a) { return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)); }

// scores8 with sixteen columns per step (vecs16 = head size / 16).
template <KvType T>
AVX512_FN inline __m256 scores8x16(const float* q, const void* k, const size_t* at, int vecs16) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int v = 0; v < vecs16; v++) {
    const __m512 qv = _mm512_loadu_ps(q + 16 * v);
    a0 = _mm512_fmadd_ps(qv, load16<T>(k, at[0] + 16 * v), a0);
    a1 = _mm512_fmadd_ps(qv, load16<T>(k, at[1] + 16 * v), a1);
    a2 = _mm512_fmadd_ps(qv, load16<T>(k, at[2] + 16 * v), a2);
    a3 = _mm512_fmadd_ps(qv, load16<T>(k, at[3] + 16 * v), a3);
    a4 = _mm512_fmadd_ps(qv, load16<T>(k, at[4] + 16 * v), a4);
    a5 = _mm512_fmadd_ps(qv, load16<T>(k, at[5] + 16 * v), a5);
    a6 = _mm512_fmadd_ps(qv, load16<T>(k, at[6] + 16 * v), a6);
    a7 = _mm512_fmadd_ps(qv, load16<T>(k, at[7] + 16 * v), a7);
  }
  return reduce8(foldHalves(a0), foldHalves(a1), foldHalves(a2), foldHalves(a3), foldHalves(a4), foldHalves(a5), foldHalves(a6),
                 foldHalves(a7));
}

// acc += sum_j p[j] * V[j] for one query vector of 16 * C columns (C = 1..4): the slice's C
// vectors in registers, two sets over alternate keys (eight multiply-add chains at 64 columns).
template <KvType T, int C>
AVX512_FN inline void accumulateOne16(float* acc, const float* p, const void* v, const size_t* at, int n) {
  __m512 r[C], s[C];
  for (int c = 0; c < C; c++) {
    r[c] = _mm512_load_ps(acc + 16 * c);
    s[c] = _mm512_setzero_ps();
  }
  int j = 0;
  for (; j + 2 <= n; j += 2) {
    const __m512 pa = _mm512_set1_ps(p[j]), pb = _mm512_set1_ps(p[j + 1]);
    for (int c = 0; c < C; c++) r[c] = _mm512_fmadd_ps(pa, load16<T>(v, at[j] + 16 * c), r[c]);
    for (int c = 0; c < C; c++) s[c] = _mm512_fmadd_ps(pb, load16<T>(v, at[j + 1] + 16 * c), s[c]);
  }
  if (j < n) {
    const __m512 pa = _mm512_set1_ps(p[j]);
    for (int c = 0; c < C; c++) r[c] = _mm512_fmadd_ps(pa, load16<T>(v, at[j] + 16 * c), r[c]);
  }
  for (int c = 0; c < C; c++) _mm512_store_ps(acc + 16 * c, _mm512_add_ps(r[c], s[c]));
}

template <KvType T>
AVX512_FN inline void accumulateOne16(float* acc, const float* p, const void* v, const size_t* at, int n, int vecs16) {
  if (vecs16 == 4) return accumulateOne16<T, 4>(acc, p, v, at, n);
  if (vecs16 == 3) return accumulateOne16<T, 3>(acc, p, v, at, n);
  if (vecs16 == 2) return accumulateOne16<T, 2>(acc, p, v, at, n);
  accumulateOne16<T, 1>(acc, p, v, at, n);
}

#define ATTEND_TARGET AVX512_FN
#define ATTEND_NAME attendAvx512
#define ATTEND_512 1
#include "attend-simd.inc"
#undef ATTEND_TARGET
#undef ATTEND_NAME
#undef ATTEND_DOT

#include "attend-prefill.inc"

#include "attend-hd8.inc"

#include "attend-bf16.inc"

#define ATTEND_TARGET BF16_FN
#define ATTEND_NAME attendDotWide
#define ATTEND_DOT 1
#include "attend-simd.inc"
#undef ATTEND_TARGET
#undef ATTEND_NAME
#undef ATTEND_512
#undef ATTEND_DOT

// New K/V rows narrowed to 16 bits, eight at a time (a prefill chunk writes thousands of rows per
// layer: the scalar conversion took 52 ms per 700-token prompt of the 100M shape as half, 21 as
// bfloat16, against 1.3 ms to copy float32). Both round to nearest even as the scalar versions do;
// F16C's conversion also handles subnormal halves, infinities and NaN.
AVX2_FN void narrowRowAvx2(const float* src, uint16_t* dst, size_t n, KvType kvType) {
  size_t j = 0;
  if (kvType == kF16) {
    for (; j + 8 <= n; j += 8)
      _mm_storeu_si128((__m128i*)(dst + j), _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; j < n; j++) dst[j] = floatToHalf(src[j]);
    return;
  }
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff), absMask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x40);
  for (; j + 8 <= n; j += 8) {
    __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + j));
    __m256i high = _mm256_srli_epi32(x, 16);
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(high, one))), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, absMask), inf);
    __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), nan);
    // Pack the eight 32-bit lanes (each below 2^16) into eight 16-bit values in order.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i*)(dst + j), _mm256_castsi256_si128(packed));
  }
  for (; j < n; j++) dst[j] = floatToBf16(src[j]);
}
#endif

// New K/V rows as 8-bit floats, eight at a time: floatToFp8's arithmetic in 32-bit lanes (the
// normal and the subnormal result both computed, the right one picked), then packed to bytes.
template <int M, int B, int MAXCODE>
AVX2_FN void narrowRowFp8Avx2(const float* src, uint8_t* dst, size_t n) {
  constexpr int shift = 23 - M;
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i roundBias = _mm256_set1_epi32((1 << (shift - 1)) - 1), one = _mm256_set1_epi32(1);
  const __m256i rebias = _mm256_set1_epi32((127 - B) << M), smallestNormal = _mm256_set1_epi32(((128 - B) << 23) - 1);
  const __m256i maxCode = _mm256_set1_epi32(MAXCODE), nanCode = _mm256_set1_epi32(0x7f), signBit = _mm256_set1_epi32(0x80);
  const __m256 steps = _mm256_set1_ps(std::ldexp(1.0f, B - 1 + M));
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + j));
    const __m256i abs = _mm256_and_si256(x, absMask);
    const __m256i normal = _mm256_sub_epi32(
        _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(abs, roundBias), _mm256_and_si256(_mm256_srli_epi32(abs, shift), one)), shift), rebias);
    const __m256i subnormal = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_castsi256_ps(abs), steps));  // MXCSR: nearest even
    __m256i code = _mm256_blendv_epi8(subnormal, normal, _mm256_cmpgt_epi32(abs, smallestNormal));
    code = _mm256_min_epi32(code, maxCode);
    code = _mm256_blendv_epi8(code, nanCode, _mm256_cmpgt_epi32(abs, inf));
    code = _mm256_or_si256(code, _mm256_and_si256(_mm256_srli_epi32(x, 24), signBit));
    // Eight 32-bit lanes (each below 256) to eight bytes in order.
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(code, code), 0x08);
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_castsi256_si128(words));
    _mm_storel_epi64((__m128i*)(dst + j), bytes);
  }
  for (; j < n; j++) dst[j] = floatToFp8<M, B, MAXCODE>(src[j]);
}

// The SIMD kernels this CPU runs, best last; attention uses `simdLevel` (the best, unless
// setSimd asked for less: the tests run every level against the same reference).
enum SimdLevel { kPortable = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };
const char* const kSimdNames[] = {"portable", "avx2", "avx512", "avx512bf16"};
constexpr int kSimdLevels = 4;

SimdLevel bestSimd() {
#ifdef ORTLLM_X86
  static const SimdLevel best = [] {
    if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))) return kPortable;
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")))
      return kAvx2;
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi") ? kAvx512Bf16 : kAvx512;
  }();
  return best;
#else
  return kPortable;
#endif
}

SimdLevel simdLevel = bestSimd();

bool useAvx2() { return bestSimd() >= kAvx2; }

void narrowRow(const float* src, uint16_t* dst, size_t n, KvType kvType) {
#ifdef ORTLLM_X86
  if (useAvx2()) return narrowRowAvx2(src, dst, n, kvType);
#endif
  uint16_t (*narrow)(float) = kvType == kF16 ? floatToHalf : floatToBf16;
  for (size_t j = 0; j < n; j++) dst[j] = narrow(src[j]);
}

void narrowRowFp8(const float* src, uint8_t* dst, size_t n, KvType kvType) {
#ifdef ORTLLM_X86
  if (useAvx2()) return kvType == kE4M3 ? narrowRowFp8Avx2<3, 7, 0x7e>(src, dst, n) : narrowRowFp8Avx2<2, 15, 0x7b>(src, dst, n);
#endif
  uint8_t (*narrow)(float) = kvType == kE4M3 ? floatToE4M3 : floatToE5M2;
  for (size_t j = 0; j < n; j++) dst[j] = narrow(src[j]);
}

#ifdef ORTLLM_X86
template <KvType T>
void attendSimd(const Call& c, const Item& it) {
  if (simdLevel >= kAvx512 && prefillItem(c.shape, it)) return attendPrefill<T>(c, it);
  const Shape& s = c.shape;
  const int group = s.numHeads / s.numKvHeads;
  // Decodes at head size 8 with KV heads in fours: four heads per float32 vector pair
  // (attend-hd8.inc), E4M3 rows on AVX512-BF16 four heads per bfloat16 vector (attend-bf16.inc:
  // its table lookup widens E4M3 in fewer operations; bfloat16 and E5M2 rows ran 10-25% faster in
  // the float32 kernel, see attention.cc's header).
  const bool quads = simdLevel >= kAvx512 && it.rows == 1 && s.headDim == 8 && it.heads % 4 == 0 && group <= kMaxQuadGroup;
  if constexpr (T == kBF16 || T == kE4M3 || T == kE5M2) {
    // AVX512-BF16 decodes: one query vector per KV head at head size 32 or 64 (attend-bf16.inc).
    if (simdLevel == kAvx512Bf16 && it.rows == 1) {
      if (T != kE5M2 && group == 1 && (s.headDim == 32 || s.headDim == 64)) return attendDotWide<T>(c, it);
      if (T == kE4M3 && quads) return attendQuads<T>(c, it);
    }
  }
  if (quads) return attendQuads32<T>(c, it);
  // Prefill tiles at head size 8 of at least half a vector of query vectors: queries across lanes.
  if (simdLevel >= kAvx512 && s.headDim == 8 && it.rows > 1 && it.heads == 1 && group * it.rows >= 8)
    return group * it.rows > 16 ? attendRows8<T, 2>(c, it) : attendRows8<T, 1>(c, it);
  if (simdLevel == kAvx2 && attendHd8Avx2Item<T>(c, it)) return;  // head size 8 decodes without AVX-512 (attend-hd8-avx2.inc)
  if (simdLevel >= kAvx512)
    attendAvx512<T>(c, it);
  else
    attendAvx2<T>(c, it);
}
#endif

// KV heads per work item for the decodes of a large batch (rows query rows each, one for a
// decode): every head of the sequence, so whole cache rows are read in order, where few query
// vectors share a KV head; one where attendPrefill takes the decode (GQA groups on AVX-512).
int decodeHeads(const Shape& s, int group, int rows) {
#ifdef ORTLLM_X86
  if (rows == 1 && group > 1 && simdLevel >= kAvx512 && s.headDim % 16 == 0) return 1;
#endif
  return group * rows < 4 ? std::min(s.numKvHeads, kMaxQueries / (group * rows)) : 1;
}

void attendItem(const Call& c, const Item& it) {
#ifdef ORTLLM_X86
  if (simdLevel >= kAvx2 && c.shape.headDim % 8 == 0) {
    switch (c.kvType) {
      case kF16: return attendSimd<kF16>(c, it);
      case kBF16: return attendSimd<kBF16>(c, it);
      case kE4M3: return attendSimd<kE4M3>(c, it);
      case kE5M2: return attendSimd<kE5M2>(c, it);
      default: return attendSimd<kF32>(c, it);
    }
  }
#endif
  for (int h = 0; h < it.heads; h++) {
    const Item one{it.seq, it.kvHead + h, it.row0, it.rows, 1};
    switch (c.kvType) {
      case kF16: attendGeneric(c, one, loadDecoded<uint16_t, halfToFloat>); break;
      case kBF16: attendGeneric(c, one, loadDecoded<uint16_t, bf16ToFloat>); break;
      case kE4M3: attendGeneric(c, one, loadDecoded<uint8_t, e4m3ToFloat>); break;
      case kE5M2: attendGeneric(c, one, loadDecoded<uint8_t, e5m2ToFloat>); break;
      default: attendGeneric(c, one, loadF32);
    }
  }
}

// ---------------------------------------------------------------- a small thread pool
// Helpers, and the caller waiting for them, spin this long before they block on a condition
// variable: a batch-1 decode step is ~100 parallel calls tens of microseconds apart, and a futex
// wake-up per call (~10-20 us, more when the other core is busy) had cost about what splitting a
// call saved. The spin yields the core each turn: a pure pause loop, when other processes held a
// core, took the caller's own time from it (100M batch-1 step 7.3 ms against 4.1-4.9 without spin).
// Measured (issue 16), 100M Q8_0 at context 128, batch 1, runner alone, 400 steps a run,
// alternating, wall ms per step: no spin and splitting only calls of >= 4M multiply-adds
// (attention >= 2e5) 4.14 / 4.50 / 4.63 / 3.99 / 4.28; pause-only spin 100 us, GEMMs split from
// 5e5 and attention from 2e4: 3.48 / 3.70 / 3.59 / 3.28 / 3.24 (CPU ms per step 4.6-5.3 ->
// 6.4-7.3: the helper's spinning); spin 30 us 3.78 / 3.65 / 3.22 / 3.46 / 3.36. Another three
// rounds on a loaded machine (load average 3-5), the ORT-norm build / no spin / pause 100 us /
// yielding 100 us: 4.91 / 4.62 / 7.26 / 4.14, 4.97 / 4.49 / 3.68 / 3.40, 5.53 / 4.08 / 3.87 / 4.07.
// Only the runner whose whole step is addon calls spins (setThreads' spinMicros; the Q8_0 path): where
// onnxruntime sessions run between the calls, its own intra-op threads need the cores the spinning
// helper held. stories260K (float32, ORT segments), runner alone, `forward.js --models stories260K
// --contexts 128 --batches 1,32 --seconds 2`, two rounds, CPU ms per step without -> with the spin
// (and attention split from 2e4): prefill 1.61 / 1.61 -> 2.04 / 1.99, batch 32 0.88 / 0.88 -> 1.26 /
// 1.14 at the same wall time; served 1 stream, runner-alone prefill 49-51k -> 38-41k tok/s.
std::atomic<int> spinMicros{0};

class Pool {
 public:
  ~Pool() { resize(0); }

  void resize(int helpers) {
    std::lock_guard<std::mutex> caller(callers_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
    for (int i = 0; i < helpers; i++) threads_.emplace_back([this] { loop(); });
  }

  int helpers() const { return (int)threads_.size(); }

  // Runs fn(i) for i in [0, n), on the caller and the helpers; returns when all are done.
  // The caller waits only for helpers that took part: one that wakes after the caller has
  // claimed every item (the helper's core was busy: the HTTP thread, the load) finds the job
  // closed and goes back to sleep, instead of the caller waiting for its wake-up (a 100M Q8_0
  // batch-32 step makes ~100 calls). Served 100M Q8_0, 32 streams of 64 tokens, short prompts,
  // both builds up at once and waves alternating (8 each): tok/s median 1232 -> 1309, higher in
  // 7 of 8 pairs; the helper thread's CPU 374 -> 330 us per token, the caller's 577 -> 562.
  void run(int n, const std::function<void(int)>& fn, int maxHelpers) {
    int use = std::min(maxHelpers, helpers());
    if (use <= 0 || n <= 1) {
      for (int i = 0; i < n; i++) fn(i);
      return;
    }
    // One job at a time: runners in two worker threads of one process (two engines, or a test
    // that starts two servers) share this pool, and a second job would overwrite the first's
    // fn_/next_/total_ while its helpers still read them.
    std::lock_guard<std::mutex> caller(callers_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      fn_ = &fn;
      next_.store(0);
      total_ = n;
      open_ = true;
      generation_++;
      wanted_ = use;
      cv_.notify_all();
    }
    drain();
    {
      // Every item is claimed: no helper joins from here on, and the caller waits for those inside.
      std::lock_guard<std::mutex> lock(mu_);
      open_ = false;
      wanted_ = 0;
    }
    spinWhile([this] { return inside_.load(std::memory_order_acquire) != 0; });
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return inside_.load() == 0; });
    fn_ = nullptr;
  }

 private:
  void drain() {
    for (int i = next_.fetch_add(1); i < total_; i = next_.fetch_add(1)) (*fn_)(i);
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      // Awake for a while after a job: the next one (a decode step's calls come tens of
      // microseconds apart) then starts without the futex wake-up.
      spinWhile([&] { return !stop_.load(std::memory_order_relaxed) && generation_.load(std::memory_order_acquire) == seen; });
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (wanted_ <= 0) continue;  // enough helpers took this job
        wanted_--;
        if (!open_) continue;
        inside_++;
      }
      drain();
      std::unique_lock<std::mutex> lock(mu_);
      if (--inside_ == 0) done_.notify_one();
    }
  }

  // Spins while `busy()` for at most the spin time (then the caller blocks on its condition variable).
  template <typename Busy>
  static void spinWhile(Busy busy) {
    if (!busy()) return;
    const int micros = spinMicros.load(std::memory_order_relaxed);
    if (micros <= 0) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
    for (int i = 0; busy(); i++) {
#ifdef ORTLLM_X86
      _mm_pause();
#endif
      // A thread of another process waiting for this core runs first (returns at once when none).
      std::this_thread::yield();
      if ((i & 15) == 15 && std::chrono::steady_clock::now() >= until) return;
    }
  }


  std::vector<std::thread> threads_;
  std::mutex callers_;  // held by the thread whose job the pool runs
  std::mutex mu_;
  std::condition_variable cv_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<int> next_{0};
  int total_ = 0;
  std::atomic<int> inside_{0};  // helpers draining the current job (changed under mu_; read spinning without it)
  bool open_ = false;  // helpers may still join the current job
  int wanted_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

Pool pool;
int threads = 1;

// ---------------------------------------------------------------- N-API glue
using namespace ortllm::napi;

// The K and V cache arguments: typed arrays of one type and length. Null when they are, else why not.
const char* readCachePair(napi_env env, napi_value kArg, napi_value vArg, Typed* k, Typed* v) {
  if (!typed(env, kArg, k)) return "kCache must be a Float32Array, Uint16Array or Uint8Array";
  if (!typed(env, vArg, v) || v->type != k->type || v->length != k->length) return "vCache must match kCache";
  return nullptr;
}

// The cache's element type: a Float32Array holds float32; a Uint16Array half or bfloat16, a
// Uint8Array E4M3 or E5M2, as `code` says.
bool kvTypeOf(const Typed& t, int32_t code, KvType* out) {
  if (t.type == napi_float32_array && code == kF32) *out = kF32;
  else if (t.type == napi_uint16_array && (code == kF16 || code == kBF16)) *out = (KvType)code;
  else if (t.type == napi_uint8_array && (code == kE4M3 || code == kE5M2)) *out = (KvType)code;
  else return false;
  return true;
}

// attention(q, out, kCache, vCache, seqs, tables, dims[numHeads, numKvHeads, headDim, blockSize, kvType], scale)
napi_value Attention(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  if (!readArgs(env, info, 8, argv)) return fail(env, "attention: expected 8 arguments");
  Typed q, out, k, v, seqs, tables, dims;
  if (!typed(env, argv[0], &q) || q.type != napi_float32_array) return fail(env, "attention: q must be a Float32Array");
  if (!typed(env, argv[1], &out) || out.type != napi_float32_array) return fail(env, "attention: out must be a Float32Array");
  if (const char* why = readCachePair(env, argv[2], argv[3], &k, &v)) return fail(env, (std::string("attention: ") + why).c_str());
  if (!typed(env, argv[4], &seqs) || seqs.type != napi_int32_array || seqs.length % 4) return fail(env, "attention: seqs must be an Int32Array of 4 per sequence");
  if (!typed(env, argv[5], &tables) || tables.type != napi_int32_array) return fail(env, "attention: tables must be an Int32Array");
  if (!typed(env, argv[6], &dims) || dims.type != napi_int32_array || dims.length != 5)
    return fail(env, "attention: dims must be Int32Array [numHeads, numKvHeads, headDim, blockSize, kvType]");
  KvType kvType;
  if (!kvTypeOf(k, ((const int32_t*)dims.data)[4], &kvType)) return fail(env, "attention: kvType does not match the cache arrays");
  double scale;
  if (napi_get_value_double(env, argv[7], &scale) != napi_ok) return fail(env, "attention: scale must be a number");
  const int32_t* d = (const int32_t*)dims.data;
  Shape shape{d[0], d[1], d[2], d[3], (float)scale};
  if (shape.numKvHeads <= 0 || shape.numHeads % shape.numKvHeads || shape.headDim <= 0 || shape.headDim > kMaxHeadDim || shape.blockSize <= 0)
    return fail(env, "attention: bad dims");
  const int group = shape.numHeads / shape.numKvHeads;
  if (group > kMaxQueries) return fail(env, "attention: more than 32 query heads per KV head");
  const size_t qStride = (size_t)shape.numHeads * shape.headDim;
  const size_t kvStride = (size_t)shape.numKvHeads * shape.headDim;
  const size_t slots = k.length / kvStride;
  if (q.length % qStride || out.length != q.length) return fail(env, "attention: q/out sizes do not match numHeads * headDim rows");
  const size_t rowsTotal = q.length / qStride;
  const int numSeqs = (int)(seqs.length / 4);
  const int32_t* si = (const int32_t*)seqs.data;
  const int32_t* tb = (const int32_t*)tables.data;
  // Validate every index the kernel will touch, so a bad call throws instead of reading wild memory.
  std::vector<Item> items;
  const int tileRows = std::max(1, kMaxQueries / group);
  const bool wide = numSeqs >= 4 * threads;  // enough sequences to keep every thread busy
  for (int s = 0; s < numSeqs; s++) {
    const int first = si[4 * s], count = si[4 * s + 1], past = si[4 * s + 2], toff = si[4 * s + 3];
    if (first < 0 || count < 1 || past < 0 || (size_t)first + count > rowsTotal) return fail(env, "attention: a sequence's rows are out of range");
    const int nblocks = (past + count + shape.blockSize - 1) / shape.blockSize;
    if (toff < 0 || (size_t)toff + nblocks > tables.length) return fail(env, "attention: a block table is out of range");
    for (int b = 0; b < nblocks; b++) {
      if (tb[toff + b] < 0 || (size_t)(tb[toff + b] + 1) * shape.blockSize > slots) return fail(env, "attention: a block id is out of range");
    }
    // Decodes of a large batch (few query vectors per KV head): one item takes every KV head of
    // the sequence, so it streams whole cache rows instead of a head's slice a row apart.
    const int rows = std::min(tileRows, count);
    const int heads = wide ? decodeHeads(shape, group, rows) : 1;
    for (int r = 0; r < count; r += tileRows)
      for (int h = 0; h < shape.numKvHeads; h += heads)
        items.push_back({s, h, r, std::min(tileRows, count - r), std::min(heads, shape.numKvHeads - h)});
  }
  Call call{(const float*)q.data, (float*)out.data, k.data, v.data, kvType, si, tb, shape};
  // Threads only pay off for enough work: estimate multiply-adds.
  double work = 0;
  for (int s = 0; s < numSeqs; s++) work += (double)si[4 * s + 1] * (si[4 * s + 2] + si[4 * s + 1]);
  work *= shape.numHeads * shape.headDim * 2.0;
  std::function<void(int)> fn = [&](int i) { attendItem(call, items[i]); };
  // Helpers from 2e4 (multiply-adds) when the pool's helper spins between calls: a batch-1
  // decode's attention at context 128 halves on two threads (100M: 44 -> 24 us a layer); from 2e5
  // when each call pays a futex wake-up (Pool's spinMicros).
  const double helperFrom = spinMicros.load(std::memory_order_relaxed) > 0 ? 2e4 : 2e5;
  pool.run((int)items.size(), fn, work > helperFrom ? threads - 1 : 0);
  return nullptr;
}

// writeKv(newK, newV, kCache, vCache, slots, kvType): rows of [n, kvDim] into cache rows slots[i].
napi_value WriteKv(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  if (!readArgs(env, info, 6, argv)) return fail(env, "writeKv: expected 6 arguments");
  Typed nk, nv, k, v, slots;
  int32_t code = 0;
  if (!typed(env, argv[0], &nk) || nk.type != napi_float32_array) return fail(env, "writeKv: newK must be a Float32Array");
  if (!typed(env, argv[1], &nv) || nv.type != napi_float32_array || nv.length != nk.length) return fail(env, "writeKv: newV must match newK");
  if (const char* why = readCachePair(env, argv[2], argv[3], &k, &v)) return fail(env, (std::string("writeKv: ") + why).c_str());
  KvType kvType;
  if (napi_get_value_int32(env, argv[5], &code) != napi_ok || !kvTypeOf(k, code, &kvType)) return fail(env, "writeKv: kvType does not match the cache arrays");
  if (!typed(env, argv[4], &slots) || slots.type != napi_int32_array || slots.length == 0 || nk.length % slots.length)
    return fail(env, "writeKv: slots must be an Int32Array, one per new row");
  const size_t n = slots.length, row = nk.length / n, numSlots = k.length / row;
  const int32_t* sl = (const int32_t*)slots.data;
  for (size_t i = 0; i < n; i++)
    if (sl[i] < 0 || (size_t)sl[i] >= numSlots) return fail(env, "writeKv: a slot is out of range");
  const float* a = (const float*)nk.data;
  const float* b = (const float*)nv.data;
  if (kvType == kF32) {
    for (size_t i = 0; i < n; i++) {
      std::memcpy((float*)k.data + (size_t)sl[i] * row, a + i * row, row * 4);
      std::memcpy((float*)v.data + (size_t)sl[i] * row, b + i * row, row * 4);
    }
  } else if (kvType == kE4M3 || kvType == kE5M2) {
    for (size_t i = 0; i < n; i++) {
      narrowRowFp8(a + i * row, (uint8_t*)k.data + (size_t)sl[i] * row, row, kvType);
      narrowRowFp8(b + i * row, (uint8_t*)v.data + (size_t)sl[i] * row, row, kvType);
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      uint16_t* kd = (uint16_t*)k.data + (size_t)sl[i] * row;
      uint16_t* vd = (uint16_t*)v.data + (size_t)sl[i] * row;
      narrowRow(a + i * row, kd, row, kvType);
      narrowRow(b + i * row, vd, row, kvType);
    }
  }
  return nullptr;
}

// setThreads(n, spinMicros = 0): threads used for attention and the addon's other kernels (the
// caller plus n - 1 helpers), and how long helpers and caller spin between calls (Pool).
napi_value SetThreads(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  size_t argc = 2;
  int32_t n = 1, spin = 0;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &n) != napi_ok || n < 1 || n > 256) return fail(env, "setThreads: n must be an integer in 1..256");
  if (argc >= 2 && (napi_get_value_int32(env, argv[1], &spin) != napi_ok || spin < 0 || spin > 10000))
    return fail(env, "setThreads: spinMicros must be an integer in 0..10000");
  spinMicros.store(spin, std::memory_order_relaxed);
  threads = n;
  if (pool.helpers() != n - 1) pool.resize(n - 1);
  return nullptr;
}

// setSimd(name): the kernel attention runs ('portable', 'avx2', 'avx512' or 'avx512bf16'), at most the best this
// CPU has; returns the one now in use. For tests and benchmarks: each level against the others.
napi_value SetSimd(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  char name[16] = {0};
  size_t len = 0;
  if (!readArgs(env, info, 1, argv) || napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &len) != napi_ok)
    return fail(env, "setSimd: expected 'portable', 'avx2', 'avx512' or 'avx512bf16'");
  int wanted = -1;
  for (int i = 0; i < kSimdLevels; i++)
    if (std::strcmp(name, kSimdNames[i]) == 0) wanted = i;
  if (wanted < 0) return fail(env, "setSimd: expected 'portable', 'avx2', 'avx512' or 'avx512bf16'");
  simdLevel = (SimdLevel)std::min(wanted, (int)bestSimd());
  napi_value out;
  napi_create_string_utf8(env, kSimdNames[simdLevel], NAPI_AUTO_LENGTH, &out);
  return out;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"attention", nullptr, Attention, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"writeKv", nullptr, WriteKv, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"setThreads", nullptr, SetThreads, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"setSimd", nullptr, SetSimd, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"free", nullptr, ortllm::FreeBuffers, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"argmax", nullptr, ortllm::Argmax, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"q8Pack", nullptr, ortllm::Q8Pack, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"q8Gemm", nullptr, ortllm::Q8Gemm, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"siluMul", nullptr, ortllm::SiluMul, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rope", nullptr, ortllm::Rope, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"bf16Pack", nullptr, ortllm::Bf16Pack, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"bf16Gemm", nullptr, ortllm::Bf16Gemm, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"addLayerNorm", nullptr, ortllm::AddLayerNorm, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"addRmsNorm", nullptr, ortllm::AddRmsNorm, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"bf16EncoderAttention", nullptr, ortllm::Bf16EncoderAttention, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  napi_value simd;
  napi_get_boolean(env, useAvx2(), &simd);
  napi_set_named_property(env, exports, "simd", simd);
  napi_set_named_property(env, exports, "q8Available", ortllm::Q8Available(env));
  napi_set_named_property(env, exports, "bf16Available", ortllm::Bf16Available(env));
  return exports;
}

}  // namespace

// The attention pool, for the other kernels of the addon (q8-gemm.cc): fn(i) for i in [0, n) on setThreads' threads.
void ortllm::parallelFor(int n, const std::function<void(int)>& fn) { pool.run(n, fn, threads - 1); }
// How many threads parallelFor runs on (the caller and its helpers).
int ortllm::parallelThreads() { return threads; }

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
