{
  "targets": [
    {
      "target_name": "ortllm_native",
      # addon.cc and addon-linear.cc are the N-API bindings; the other sources are the kernels.
      "sources": ["src/addon.cc", "src/addon-linear.cc", "src/attention.cc", "src/kv-write.cc", "src/thread-pool.cc", "src/argmax.cc",
                  "src/q8-gemm.cc", "src/bf16-gemm.cc", "src/bf16-encoder-attention.cc", "src/rms-norm.cc",
                  "src/lora-add.cc"],
      # -Wno-uninitialized: GCC 12's AVX-512 headers (_mm512_undefined_ps' self-initialisation)
      # warn at every inlined intrinsic, a false positive whose megabyte of output overflowed
      # build-native.js's pipe.
      "cflags_cc": ["-O3", "-std=c++17", "-fno-exceptions", "-Wno-uninitialized"],
      "cflags_cc!": ["-fno-rtti"]
    },
    {
      # The small-model float32 layers (f32-decoder.cc, registered by f32-addon.cc): their own addon.
      "target_name": "ortllm_f32",
      "sources": ["src/f32-addon.cc", "src/f32-decoder.cc"],
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
