// float32 on the CUDA execution provider computes as on the CPU: no TF32.
//
// onnxruntime's CUDA provider lets cuBLAS use TF32 tensor cores for float32 GEMMs (its use_tf32
// option is on by default, and onnxruntime-node passes no CUDA provider option but deviceId).
// TF32 keeps 10 mantissa bits. Measured on an H200 with bench/cuda-check (docs/cuda.md): with TF32,
// greedy tokens of a random ~100M float32 model differed from the CPU runner's in 1-3 of 8-32
// sequences; with NVIDIA_TF32_OVERRIDE=0 every sequence matched, on that model and on the ~1.1B
// shape, and decode was not slower (the step is bound by per-segment host transfers, not GEMMs).
// PyTorch, and so vLLM, keeps TF32 off for matmuls by default.
//
// cuBLAS reads the variable from the process environment when a handle is created. A worker
// thread's process.env is a copy, so createEngine calls this on the main thread, before the
// engine worker that creates the CUDA sessions starts. A value the operator set is kept (NVIDIA_TF32_OVERRIDE=1
// allows TF32 again).

/** Sets NVIDIA_TF32_OVERRIDE=0 unless the environment already names a value. */
export function keepCudaFloat32Exact(env: NodeJS.ProcessEnv = process.env): void {
  env.NVIDIA_TF32_OVERRIDE ??= '0';
}
