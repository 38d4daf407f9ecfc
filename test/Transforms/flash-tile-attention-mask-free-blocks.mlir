// mask-free-blocks of --flash-tile-attention (the default): each backward
// nest's inner loop split into blocks that need a mask (keys past N, across
// the causal diagonal or a window's edge) and blocks that need none, whose
// P = exp2(s c - LSE log2 e) takes no per-element select. A fully masked
// row (LSE = -inf) gets P = 0 through its exponent in both: the select of
// -inf for the row's term depends on the LSE alone. The dK/dV nest's loop
// over a GQA group's heads carries flash.fresh_tiles (each head loads its
// own tiles), which lets the GPU mapping give both loops' tiles the same
// bytes. M = 96 queries, N = 80 keys: the CTA of keys 64..79 holds a
// partial block and masks every step.
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false" -cse | FileCheck %s
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false mask-free-blocks=0" -cse | FileCheck %s --check-prefix=ONE
// RUN: flash-opt %s --flash-tile-attention="target=sm_80" -cse | FileCheck %s --check-prefix=DQ
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false mask-under-branch=1" -cse | FileCheck %s --check-prefix=BRANCH

// CHECK-LABEL: func.func @causal
// The dK/dV nest: causal query blocks [first, fullBegin) masked, the rest
// not, all masked where the CTA's keys are not whole.
// CHECK: %[[WHOLE:.*]] = arith.cmpi eq, %{{.*}}, %c64 : index
// CHECK: %[[BEGIN:.*]] = arith.select %[[WHOLE]], %{{.*}}, %c2 : index
// CHECK: %[[END:.*]] = arith.select %[[WHOLE]], %c2, %c2 : index
// CHECK: scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args
// CHECK: scf.for %{{.*}} = %[[FIRST:.*]] to %[[BEGIN]] step %c1 iter_args
// CHECK: linalg.generic
// CHECK: %[[MINF:.*]] = arith.cmpf oeq, %[[LSE:.*]], %[[NEGINF:.*]] : f32
// CHECK: arith.select %[[MINF]], %[[NEGINF]], %{{.*}} : f32
// CHECK: %[[P:.*]] = math.exp2
// CHECK: arith.cmpi sge, %{{.*}}, %c80 : index
// CHECK: arith.cmpi sgt
// CHECK: %[[MASKED:.*]] = arith.select %{{.*}}, %{{.*}}, %[[P]] : f32
// CHECK-NEXT: linalg.yield %[[MASKED]] : f32
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %[[END]] step %c1 iter_args
// CHECK: linalg.generic
// CHECK: %[[MINF2:.*]] = arith.cmpf oeq
// CHECK: arith.select %[[MINF2]]
// CHECK-NOT: arith.cmpi
// CHECK: %[[P2:.*]] = math.exp2
// CHECK-NEXT: linalg.yield %[[P2]] : f32
// CHECK: } {flash.fresh_tiles}

// ONE: scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args
// ONE-NEXT: arith.addi
// ONE-NEXT: scf.for
// ONE-NOT: scf.for
// ONE: } {flash.fresh_tiles}

// mask-under-branch: one loop over the query blocks; P without a select,
// then under a branch on the block lying outside [fullBegin, fullEnd) the
// keys past N and across the diagonal set to 0, in place on P.
// BRANCH: %[[WHOLE:.*]] = arith.cmpi eq, %{{.*}}, %c64 : index
// BRANCH: %[[BEGIN:.*]] = arith.select %[[WHOLE]], %{{.*}}, %c2 : index
// BRANCH: %[[END:.*]] = arith.select %[[WHOLE]], %c2, %c2 : index
// BRANCH: scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args
// BRANCH: scf.for %[[QB:.*]] = %{{.*}} to %c2 step %c1 iter_args
// BRANCH-NOT: scf.for
// BRANCH: %[[AFTER:.*]] = arith.cmpi sge, %[[QB]], %[[END]] : index
// BRANCH: %[[BEFORE:.*]] = arith.cmpi slt, %[[QB]], %[[BEGIN]] : index
// BRANCH: %[[OUTSIDE:.*]] = arith.ori %[[BEFORE]], %[[AFTER]] : i1
// BRANCH: %[[P:.*]] = linalg.generic
// BRANCH-NOT: arith.cmpi
// BRANCH: %[[E:.*]] = math.exp2
// BRANCH-NEXT: linalg.yield %[[E]] : f32
// BRANCH: %[[PM:.*]] = scf.if %[[OUTSIDE]] -> (tensor<64x64xf32>) {
// BRANCH-NEXT: %[[SEL:.*]] = linalg.generic {{.*}} outs(%[[P]] : tensor<64x64xf32>)
// BRANCH: arith.cmpi sge, %{{.*}}, %c80 : index
// BRANCH: arith.cmpi sgt
// BRANCH: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// BRANCH: scf.yield %[[SEL]]
// BRANCH-NEXT: } else {
// BRANCH-NEXT: scf.yield %[[P]]
// BRANCH: linalg.generic {{.*}} ins(%[[PM]] : tensor<64x64xf32>)
// BRANCH-NOT: scf.for
// BRANCH: } {flash.fresh_tiles}

// The deterministic dQ nest: whole key blocks below the diagonal unmasked,
// the diagonal's and the last (partial) block masked.
// DQ-LABEL: func.func @causal
// DQ: scf.forall
// DQ: %[[ACC:.*]] = scf.for %{{.*}} = %[[B0:.*]] to %[[B1:.*]] step %c1 iter_args
// DQ: math.exp2
// DQ-NEXT: linalg.yield
// DQ: scf.for %{{.*}} = %[[B1]] to %{{.*}} step %c1 iter_args(%{{.*}} = %[[ACC]])
// DQ: math.exp2
// DQ: arith.cmpi sge
// DQ: arith.select

func.func @causal(%q: tensor<1x2x96x64xbf16>, %k: tensor<1x2x80x64xbf16>, %v: tensor<1x2x80x64xbf16>, %o: tensor<1x2x96x64xbf16>, %do: tensor<1x2x96x64xbf16>, %lse: tensor<1x2x96xf32>) -> (tensor<1x2x96x64xbf16>, tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<1x2x96x64xbf16>, tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16>, tensor<1x2x96x64xbf16>, tensor<1x2x96xf32>
  return %dq, %dk, %dv : tensor<1x2x96x64xbf16>, tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16>
}
