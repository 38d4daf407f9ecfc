// A tile that --flash-gpu-assign-tile-storage kept in accumulators must be
// taken by its contraction's MMA: without tensor cores nothing takes it,
// and that is a located error, not a kernel reading memory that does not
// exist.
// RUN: flash-opt %s --split-input-file --flash-gpu-lower-tile-mma="tensor-cores=none" -verify-diagnostics

#at = affine_map<(d0, d1, d2) -> (d2, d0)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @grad_query_block(%ds_t: memref<64x64xbf16>, %k: memref<64x64xbf16>,
                            %dq: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %fzero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{flash-gpu-lower-tile-mma: a tile kept in accumulators is still used}}
    %dq_step = memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
    linalg.fill ins(%fzero : f32) outs(%dq_step : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ds_t, %k : memref<64x64xbf16>, memref<64x64xbf16>) outs(%dq_step : memref<64x64xf32>) attrs = {flash.contraction = "grad_query_block"} {
    ^bb0(%x: bf16, %y: bf16, %out: f32):
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %xy = arith.mulf %xf, %yf : f32
      %sum = arith.addf %out, %xy : f32
      linalg.yield %sum : f32
    }
    flash.atomic_add %dq_step, %dq : memref<64x64xf32>, memref<64x64xf32>
    gpu.terminator
  }
  return
}

// -----

// A contraction reading a swizzled tile (--flash-gpu-assign-tile-storage's
// layout for ldmatrix) that only WMMA could take: WMMA's fragment loads read
// row-major tiles, and the element-wise fallback would too: a located error
// (with tensor cores none as well; the accumulators above fail so with wmma).
// RUN: flash-opt %s --split-input-file --flash-gpu-lower-tile-mma="tensor-cores=wmma" -verify-diagnostics

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#bt = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @swizzled_without_mma_sync(%s: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %bytes = arith.constant 16384 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %bytes {
    %smem = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %c8192 = arith.constant 8192 : index
    %qv = memref.view %smem[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
    %q = memref.memory_space_cast %qv {flash.swizzled_128b} : memref<64x64xf16, #gpu.address_space<workgroup>> to memref<64x64xf16>
    %kv = memref.view %smem[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf16, #gpu.address_space<workgroup>>
    %k = memref.memory_space_cast %kv {flash.swizzled_128b} : memref<64x64xf16, #gpu.address_space<workgroup>> to memref<64x64xf16>
    // expected-error @+1 {{flash-gpu-lower-tile-mma: a contraction reads a swizzled tile and no MMA lowering that reads that layout took it (mma.sync or wgmma: tensor-cores=mma-sync, auto or wgmma)}}
    linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : memref<64x64xf16>, memref<64x64xf16>) outs(%s : memref<64x64xf32>) attrs = {flash.contraction = "scores"} {
    ^bb0(%x: f16, %y: f16, %out: f32):
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %xy = arith.mulf %xf, %yf : f32
      %sum = arith.addf %out, %xy : f32
      linalg.yield %sum : f32
    }
    gpu.terminator
  }
  return
}
