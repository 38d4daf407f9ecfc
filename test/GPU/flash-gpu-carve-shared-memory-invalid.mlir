// Tiles that need more shared memory than a CTA may use on the chip are a
// located error naming both sizes (before any later step unrolls them).
// RUN: flash-opt %s --allow-unregistered-dialect --split-input-file --flash-gpu-carve-shared-memory="chip=sm_80" -verify-diagnostics
// RUN: flash-opt %s --allow-unregistered-dialect --split-input-file --flash-gpu-carve-shared-memory="chip=sm_90a" | FileCheck %s
// CHECK: flash.shared_memory_bytes = 196608 : i64

func.func @too_large() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  // expected-error @+1 {{flash-gpu-carve-shared-memory: the tiles need 196608 B of shared memory, more than the 166912 B a CTA may use on sm_80}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloc() : memref<256x128xf32>
    %b = memref.alloc() : memref<128x128xf32>
    "test.use"(%a, %b) : (memref<256x128xf32>, memref<128x128xf32>) -> ()
    gpu.terminator
  }
  return
}
