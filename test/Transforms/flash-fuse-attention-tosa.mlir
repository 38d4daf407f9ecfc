// RUN: flash-opt %s --tosa-to-linalg-pipeline --tosa-to-arith --flash-fuse-attention | FileCheck %s
// RUN: %python -m flash_mlir.fusion_check %s --expect fused --pre "--tosa-to-linalg-pipeline --tosa-to-arith" | FileCheck %s --check-prefix=EXEC
// The same through the one documented TOSA entry point (lowering + fusion):
// RUN: flash-opt %s --flash-tosa-to-attention | FileCheck %s
// RUN: flash-opt %s --flash-tosa-to-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// REPORT: remark: fused attention: scale = 2.500000e-01

// EXEC: PASS @tosa_attention (fused)
// CHECK-LABEL: func @tosa_attention
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<4x12x16xf32>, %[[K:[^:]*]]: tensor<4x20x16xf32>, %[[V:[^:]*]]: tensor<4x20x8xf32>)
// CHECK-NOT: linalg.
// CHECK: %[[O:.*]] = flash.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f32} : tensor<4x12x16xf32>, tensor<4x20x16xf32>, tensor<4x20x8xf32> -> tensor<4x12x8xf32>
// CHECK-NEXT: return %[[O]]
// TOSA: transpose / matmul / mul / reduce_max / sub / exp / reduce_sum /
// reciprocal / mul / matmul, lowered with --tosa-to-linalg-pipeline first.
func.func @tosa_attention(%q: tensor<4x12x16xf32>, %k: tensor<4x20x16xf32>, %v: tensor<4x20x8xf32>) -> tensor<4x12x8xf32> {
  %kt = tosa.transpose %k {perms = array<i32: 0, 2, 1>} : (tensor<4x20x16xf32>) -> tensor<4x16x20xf32>
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %s = tosa.matmul %q, %kt, %zp, %zp : (tensor<4x12x16xf32>, tensor<4x16x20xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x12x20xf32>
  %c = "tosa.const"() <{values = dense<0.25> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>
  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %x = tosa.mul %s, %c, %shift : (tensor<4x12x20xf32>, tensor<1x1x1xf32>, tensor<1xi8>) -> tensor<4x12x20xf32>
  %mx = tosa.reduce_max %x {axis = 2 : i32} : (tensor<4x12x20xf32>) -> tensor<4x12x1xf32>
  %d = tosa.sub %x, %mx : (tensor<4x12x20xf32>, tensor<4x12x1xf32>) -> tensor<4x12x20xf32>
  %e = tosa.exp %d : (tensor<4x12x20xf32>) -> tensor<4x12x20xf32>
  %l = tosa.reduce_sum %e {axis = 2 : i32} : (tensor<4x12x20xf32>) -> tensor<4x12x1xf32>
  %r = tosa.reciprocal %l : (tensor<4x12x1xf32>) -> tensor<4x12x1xf32>
  %p = tosa.mul %e, %r, %shift : (tensor<4x12x20xf32>, tensor<4x12x1xf32>, tensor<1xi8>) -> tensor<4x12x20xf32>
  %o = tosa.matmul %p, %v, %zp, %zp : (tensor<4x12x20xf32>, tensor<4x20x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x12x8xf32>
  return %o : tensor<4x12x8xf32>
}
