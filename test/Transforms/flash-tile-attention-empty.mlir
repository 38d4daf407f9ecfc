// Static sizes of 0 tile into valid IR (fuzzer finding F1): no slice may
// take a static offset into a size-0 dimension (the slice verifier rejects
// offset 0 of a size-0 dimension too), so the CPU form of the backward does
// not insert into gradients that are empty (dQ for M = 0, dK and dV for
// N = 0); the numbers: test/Fuzz/zero-sizes.test.
// RUN: flash-opt %s -split-input-file --flash-tile-attention | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-tile-attention=target=sm_80 | FileCheck %s --check-prefix=GPU
// RUN: flash-opt %s -split-input-file --flash-cpu-pipeline -o /dev/null
// RUN: flash-opt %s -split-input-file --flash-cpu-pipeline=target=sm_90a -o /dev/null
// RUN: flash-opt %s -split-input-file --flash-cpu-pipeline=tile=false -o /dev/null

// CHECK-LABEL: func @backward_no_queries
// CHECK: scf.forall
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}, 0, 0] [1, 1, %c24, 8] [1, 1, 1, 1] : tensor<?x8xf32> into tensor<1x1x24x8xf32>
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}, 0, 0] [1, 1, %c24, 8] [1, 1, 1, 1] : tensor<?x8xf32> into tensor<1x1x24x8xf32>
// CHECK-NEXT: }
// The GPU form: a dQ nest over no query blocks, a dK/dV nest that visits
// no query block.
// GPU-LABEL: func @backward_no_queries
// GPU-COUNT-2: scf.forall
func.func @backward_no_queries(%q: tensor<1x2x0x8xf32>, %k: tensor<1x1x24x8xf32>, %o: tensor<1x2x0x8xf32>, %lse: tensor<1x2x0xf32>) -> (tensor<1x2x0x8xf32>, tensor<1x1x24x8xf32>, tensor<1x1x24x8xf32>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %o, %o, %lse {causal} : tensor<1x2x0x8xf32>, tensor<1x1x24x8xf32>, tensor<1x1x24x8xf32>, tensor<1x2x0x8xf32>, tensor<1x2x0xf32>
  return %dq, %dk, %dv : tensor<1x2x0x8xf32>, tensor<1x1x24x8xf32>, tensor<1x1x24x8xf32>
}

// -----

// CHECK-LABEL: func @backward_no_keys
// CHECK: scf.forall
// CHECK: scf.forall.in_parallel {
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}, 0, 0] [1, %c2{{.*}}, %c16, 8] [1, 1, 1, 1] : tensor<?x?x8xf16> into tensor<?x2x16x8xf16>
// CHECK-NEXT: }
// GPU-LABEL: func @backward_no_keys
// GPU-COUNT-2: scf.forall
func.func @backward_no_keys(%q: tensor<?x2x16x8xf16>, %k: tensor<?x1x0x8xf16>, %o: tensor<?x2x16x8xf16>, %lse: tensor<?x2x16xf32>) -> (tensor<?x2x16x8xf16>, tensor<?x1x0x8xf16>, tensor<?x1x0x8xf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %o, %o, %lse {window = 4 : i64} : tensor<?x2x16x8xf16>, tensor<?x1x0x8xf16>, tensor<?x1x0x8xf16>, tensor<?x2x16x8xf16>, tensor<?x2x16xf32>
  return %dq, %dk, %dv : tensor<?x2x16x8xf16>, tensor<?x1x0x8xf16>, tensor<?x1x0x8xf16>
}

// -----

// The forward needs no special case: every slice offset into M and N is a
// loop index, and the loops over zero blocks do not run.
// CHECK-LABEL: func @forward_empty
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%c0{{.*}}, %c2{{.*}}, %c{{.*}})
// GPU-LABEL: func @forward_empty
// GPU: scf.forall
func.func @forward_empty(%q: tensor<0x2x16x8xf32>, %k: tensor<0x2x0x8xf32>) -> (tensor<0x2x16x8xf32>, tensor<0x2x16xf32>) {
  %o, %lse = flash.attention %q, %k, %k {causal} : tensor<0x2x16x8xf32>, tensor<0x2x0x8xf32>, tensor<0x2x0x8xf32> -> tensor<0x2x16x8xf32>, tensor<0x2x16xf32>
  return %o, %lse : tensor<0x2x16x8xf32>, tensor<0x2x16xf32>
}
