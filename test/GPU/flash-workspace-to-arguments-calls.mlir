// The tiled GPU backward's workspace (D = rowsum(dO O)) becomes an argument
// of its function, and every call passes it: each caller allocates it
// (sized from the call's operands) as a workspace of its own, which in turn
// becomes the caller's argument, up to the function the host calls. The
// cross-function training graphs of flash-fuse-attention-backward-split.mlir
// used to leave the calls as they were, an invalid func.call (fuzzer finding
// F7, docs/Fuzzing.md).
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile-attention=target=sm_80 --flash-workspace-to-arguments | FileCheck %s

// The F7 repro: the training step after --flash-fuse-attention-backward,
// a public step calling a private forward and a private backward.
// CHECK-LABEL: func.func @train_step_causal_200x333(
// CHECK-SAME: %[[Q:[^:]*]]: tensor<1x2x200x16xf32>, %[[K:[^:]*]]: tensor<1x2x333x16xf32>, %[[V:[^:]*]]: tensor<1x2x333x16xf32>, %[[DO:[^:]*]]: tensor<1x2x200x16xf32>,
// CHECK-SAME: %[[D:[^:]*]]: tensor<?x?x?xf32> {bufferization.writable = true, flash.workspace = "d"})
// CHECK: %[[F:.*]]:3 = call @attn_fwd_causal(%[[Q]], %[[K]], %[[V]])
// CHECK-NOT: tensor.empty{{.*}}flash.workspace
// CHECK: call @attn_bwd_causal(%[[Q]], %[[K]], %[[V]], %[[F]]#1, %[[F]]#2, %[[DO]], %[[D]])
// CHECK-LABEL: func.func private @attn_bwd_causal(
// CHECK-SAME: %{{[^:]*}}: tensor<?x?x?xf32> {bufferization.writable = true, flash.workspace = "d"})
// CHECK-NOT: tensor.empty{{.*}}flash.workspace
func.func @train_step_causal_200x333(%arg0: tensor<1x2x200x16xf32>, %arg1: tensor<1x2x333x16xf32>, %arg2: tensor<1x2x333x16xf32>, %arg3: tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) {
  %0:3 = call @attn_fwd_causal(%arg0, %arg1, %arg2) : (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200xf32>)
  %1:3 = call @attn_bwd_causal(%arg0, %arg1, %arg2, %0#1, %0#2, %arg3) : (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200xf32>, tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>)
  return %0#0, %1#0, %1#1, %1#2 : tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>
}
func.func private @attn_fwd_causal(%arg0: tensor<1x2x200x16xf32>, %arg1: tensor<1x2x333x16xf32>, %arg2: tensor<1x2x333x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200xf32>) {
  %output, %lse = flash.attention %arg0, %arg1, %arg2 {causal, scale = 2.500000e-01 : f32} : tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32> -> tensor<1x2x200x16xf32>, tensor<1x2x200xf32>
  return %output, %output, %lse : tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200xf32>
}
func.func private @attn_bwd_causal(%arg0: tensor<1x2x200x16xf32>, %arg1: tensor<1x2x333x16xf32>, %arg2: tensor<1x2x333x16xf32>, %arg3: tensor<1x2x200x16xf32>, %arg4: tensor<1x2x200xf32>, %arg5: tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) {
  %grad_query, %grad_key, %grad_value = flash.attention_backward %arg0, %arg1, %arg2, %arg3, %arg5, %arg4 {causal, scale = 2.500000e-01 : f32} : tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200xf32>
  return %grad_query, %grad_key, %grad_value : tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>
}

// -----

// Dynamic sizes are recomputed at each call from its operands; through two
// private levels the workspace reaches the public entry's arguments. Where
// a caller cannot size it from its own arguments (the second call reads a
// result of the first), that caller allocates it.
// CHECK-LABEL: func.func private @backward(
// CHECK-SAME: %{{[^:]*}}: tensor<?x?x?xf32>, %{{[^:]*}}: tensor<?x4x?xf32> {bufferization.writable = true, flash.workspace = "d"})
// CHECK-LABEL: func.func private @step(
// CHECK-SAME: %[[LSE:[^:]*]]: tensor<?x?x?xf32>, %[[W:[^:]*]]: tensor<?x4x?xf32> {bufferization.writable = true, flash.workspace = "d"})
// CHECK: %[[FIRST:.*]] = call @backward(%[[LSE]], %[[W]])
// CHECK: %[[B:.*]] = tensor.dim %[[FIRST]], %c0
// CHECK: %[[M:.*]] = tensor.dim %[[FIRST]], %c2
// CHECK: %[[OWN:.*]] = tensor.empty(%[[B]], %[[M]]) : tensor<?x4x?xf32>
// CHECK: call @backward(%[[FIRST]], %[[OWN]])
// CHECK-LABEL: func.func @entry(
// CHECK-SAME: %[[LSE:[^:]*]]: tensor<?x?x?xf32>, %[[W:[^:]*]]: tensor<?x4x?xf32> {bufferization.writable = true, flash.workspace = "d"})
// CHECK: call @step(%[[LSE]], %[[W]])
func.func private @backward(%lse: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %lse, %c0 : tensor<?x?x?xf32>
  %m = tensor.dim %lse, %c2 : tensor<?x?x?xf32>
  %d = tensor.empty(%b, %m) {flash.workspace = "d"} : tensor<?x4x?xf32>
  %cast = tensor.cast %d : tensor<?x4x?xf32> to tensor<?x?x?xf32>
  return %cast : tensor<?x?x?xf32>
}
func.func private @step(%lse: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %0 = call @backward(%lse) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %1 = call @backward(%0) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %1 : tensor<?x?x?xf32>
}
func.func @entry(%lse: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %0 = call @step(%lse) : (tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// What cannot pass the workspace is a located error.
func.func private @backward(%lse: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %lse, %c0 : tensor<?xf32>
  %d = tensor.empty(%n) {flash.workspace = "d"} : tensor<?xf32>
  return %d : tensor<?xf32>
}
func.func @take() -> ((tensor<?xf32>) -> tensor<?xf32>) {
  // expected-error @+1 {{flash-workspace-to-arguments: @backward takes its tiled backward's workspace as an argument, which only a func.call can pass}}
  %f = func.constant @backward : (tensor<?xf32>) -> tensor<?xf32>
  return %f : (tensor<?xf32>) -> tensor<?xf32>
}

// -----

func.func private @recursive(%lse: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %lse, %c0 : tensor<?xf32>
  %d = tensor.empty(%n) {flash.workspace = "d"} : tensor<?xf32>
  // expected-error @+1 {{flash-workspace-to-arguments: a recursive call cannot pass the workspace of @recursive}}
  %r = call @recursive(%d) : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A public function keeps its workspace as an argument for the host, so a
// call in the module must size it from the call's operands.
func.func @public_backward(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = call @opaque(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %y, %c0 : tensor<?xf32>
  // expected-note @+1 {{the workspace}}
  %d = tensor.empty(%n) {flash.workspace = "d"} : tensor<?xf32>
  return %d : tensor<?xf32>
}
func.func private @opaque(%x: tensor<?xf32>) -> tensor<?xf32>
func.func @caller(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{flash-workspace-to-arguments: cannot allocate the workspace of @public_backward for this call: its size is not computed from the callee's arguments}}
  %r = call @public_backward(%x) : (tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
