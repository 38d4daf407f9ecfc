// Only cp.async and TMA loads of whole rows place a swizzled tile's bytes
// (--flash-gpu-assign-tile-storage swizzles only tiles written so): any
// other copy into one is a located error, not rows written in order.
// RUN: flash-opt %s --flash-gpu-async-tile-loads -verify-diagnostics

func.func @copy_into_swizzled(%src: memref<64x64xbf16>) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c0_i32 = arith.constant 8192 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %c0_i32 {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %view = memref.view %smem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %tile = memref.memory_space_cast %view {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    // expected-error @+1 {{flash-gpu-async-tile-loads: a copy into a swizzled shared tile that is not a load of whole rows (cp.async or TMA would place its bytes)}}
    memref.copy %src, %tile : memref<64x64xbf16> to memref<64x64xbf16>
    gpu.terminator
  }
  return
}
