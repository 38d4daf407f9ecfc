// A tile that --flash-gpu-assign-tile-storage kept in accumulators must be
// taken by its contraction's MMA: without tensor cores nothing takes it,
// and that is a located error, not a kernel reading memory that does not
// exist.
// RUN: flash-opt %s --flash-gpu-lower-tile-mma="tensor-cores=none" -verify-diagnostics

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
