// RUN: flash-opt %s --split-input-file --verify-diagnostics --flash-gpu-launch-bounds

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @two_counts() kernel {
      flashgpu.ctas_per_sm 2
      // expected-error @below {{'flashgpu.ctas_per_sm' op states 3 CTAs per SM where the kernel also states 2}}
      flashgpu.ctas_per_sm 3
      gpu.return
    }
  }
}

// -----

func.func @outside_a_kernel() {
  // expected-error @below {{'flashgpu.ctas_per_sm' op states a kernel's launch bound: it must be inside a gpu.launch or gpu.func}}
  flashgpu.ctas_per_sm 2
  return
}
