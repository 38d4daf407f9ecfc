// RUN: flash-opt %s --flash-tile-attention="block-rows=32 block-cols=64" -split-input-file | FileCheck %s
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a block-rows=32 block-cols=64" -split-input-file | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 33 --n 20 --d 16 --scale 1e10 | FileCheck %s --check-prefix=EXEC
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 2 --hkv 1 --m 70 --n 90 --d 16 --scale 1e10 --causal --dynamic mn --block-rows 32 --block-cols 32 | FileCheck %s --check-prefix=EXEC
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 33 --n 20 --d 16 --dtype f16 --scale 1e10 --window 5 --target sm_80 | FileCheck %s --check-prefix=EXEC
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 33 --n 20 --d 16 --dtype bf16 --scale 1e30 --target sm_90a | FileCheck %s --check-prefix=EXEC
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 33 --n 20 --d 16 --scale 700 | FileCheck %s --check-prefix=EXEC
// RUN: %python -m flash_mlir.fusion_check %S/Inputs/exp2-large-constant.mlir | FileCheck %s --check-prefix=FUSED

// Without a bias the tiled forward applies a positive scale in the exponent,
// exp2(c s - m') with m' = round(c max s) as one FMA; the max score's
// exponent is then off by the rounding of m', up to 2^-24 |m'|, which
// cancels in O and the LSE only while exp2 stays in range. With scale = 1e10
// (c = 1.44e10) it overflowed: P = inf, O = NaN, LSE = inf. Scales with
// c > 2^10 are applied to the scores before the row max, in natural units:
// the max is then one of the scores as rounded (its exponent exactly 0), each
// exponent is exp2((x - m) log2 e), subtracted first, and the LSE is m + ln l,
// which the backward's P = exp(scale s - LSE) recomputes without overflow
// (rounded apart, c m and LSE log2 e differed by about 1e3;
// test/Integration/attention-backward-large-scale.mlir).

// CHECK-LABEL: func @large_scale
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// The scores scaled first, in natural units ...
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[C:.*]] = arith.constant 1.000000e+10 : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[C]] : f32
// CHECK-NEXT: linalg.yield
// ... then their max, and P = exp2((x - m') log2 e).
// CHECK: arith.maximumf
// CHECK: %[[D:.*]] = arith.subf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: %[[L:.*]] = arith.constant 1.44269502 : f32
// CHECK-NEXT: arith.mulf %[[D]], %[[L]] : f32
// CHECK-NEXT: math.exp2
// CHECK: scf.yield
func.func @large_scale(%q: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = flash.attention %q, %q, %q {scale = 1.0e+10 : f32} : tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32> -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// c = 700 log2(e) = 1009.9 is still applied in the exponent: the scores'
// row max first, then c times it, and P = exp2(c s - m') (one FMA).

// CHECK-LABEL: func @scale_in_exponent
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.maximumf
// CHECK: %[[C:.*]] = arith.constant 1009.88654 : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[C]] : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: arith.constant 0xFF800000
// CHECK: arith.subf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: math.exp2
func.func @scale_in_exponent(%q: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = flash.attention %q, %q, %q {scale = 700.0 : f32} : tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32> -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// EXEC: PASS
// FUSED: PASS @exp2_large_constant (fused)
// FUSED: fusion_check: 0 failure(s)
