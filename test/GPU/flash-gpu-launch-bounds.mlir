// --flash-gpu-launch-bounds: a kernel's flashgpu.ctas_per_sm (placed inside
// the launch, where it survives outlining) becomes the gpu.func's
// nvvm.minctasm, which the NVVM lowering prints as .minnctapersm.
// RUN: flash-opt %s --flash-gpu-launch-bounds | FileCheck %s
// RUN: flash-opt %s --flash-gpu-launch-bounds | mlir-opt --gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-format=isa cubin-features=+ptx80" | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: gpu.func @two_per_sm
// CHECK-SAME: nvvm.minctasm = 2 : i32
// CHECK-NOT: flashgpu.ctas_per_sm
// CHECK-LABEL: gpu.func @unbounded
// CHECK-NOT: nvvm.minctasm
// PTX: .maxntid 256, 1, 1\0A.minnctapersm 2\0A{
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @two_per_sm(%a: memref<4xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      flashgpu.ctas_per_sm 2
      %c0 = arith.constant 0 : index
      %x = arith.constant 1.0 : f32
      memref.store %x, %a[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @unbounded(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
}
