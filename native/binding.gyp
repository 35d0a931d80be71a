{
  "targets": [
    {
      "target_name": "ortllm_native",
      "sources": ["src/attention.cc", "src/argmax.cc", "src/free-buffers.cc", "src/q8-gemm.cc", "src/bf16-gemm.cc", "src/bf16-encoder-attention.cc", "src/rms-norm.cc"],
      # -Wno-uninitialized: GCC 12's AVX-512 headers (_mm512_undefined_ps' self-initialisation)
      # warn at every inlined intrinsic, a false positive whose megabyte of output overflowed
      # build-native.js's pipe.
      "cflags_cc": ["-O3", "-std=c++17", "-fno-exceptions", "-Wno-uninitialized"],
      "cflags_cc!": ["-fno-rtti"]
    },
    {
      # The small-model float32 layers (f32-decoder.cc): its own addon, registering its own functions.
      "target_name": "ortllm_f32",
      "sources": ["src/f32-decoder.cc"],
      "cflags_cc": ["-O3", "-std=c++17", "-fno-exceptions", "-Wno-uninitialized"],
      "cflags_cc!": ["-fno-rtti"]
    },
    {
      "target_name": "ortllm_json",
      "sources": ["src/float-json.cc"],
      "cflags_cc": ["-O2", "-std=c++17", "-fno-exceptions"]
    },
    {
      "target_name": "ortllm_malloc",
      "sources": ["src/malloc-tuning.cc"],
      "cflags_cc": ["-O2", "-std=c++17", "-fno-exceptions"]
    }
  ]
}
