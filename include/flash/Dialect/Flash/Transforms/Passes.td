//===- Passes.td - flash transformation passes -------------*- tablegen -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_TD
#define FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FlashDecomposeAttentionPass : Pass<"flash-decompose-attention"> {
  let summary = "Rewrite flash ops into naive, materialising linalg";
  let description = [{
    Spells out the reference semantics of `flash.attention` and
    `flash.attention_backward` as linalg on tensors: contraction of Q and K
    into the full score matrix S (f32 accumulation), scale, bias, mask and
    causal masking, a max-subtracted softmax that gives fully masked rows
    P = 0, and the contraction of P with V. The backward op becomes the
    standard gradient formulas (P recomputed from LSE, dV = Pᵀ dO,
    dS = P (dP - rowsum(dO O)), dQ = scale dS K, dK = scale dSᵀ Q).

    Grouped-query attention is expressed by splitting the query-head axis
    into (Hkv, Hq / Hkv) with `tensor.expand_shape`, so every contraction is
    a plain `linalg.generic` and dK/dV sum over the group as part of their
    contraction.

    This form materialises N x N matrices: it is the reference that every
    other transformation is checked against, not a fast path.

    Before:
    ```mlir
    %o = flash.attention %q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>,
        tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
    ```
    After (abridged):
    ```mlir
    %s = linalg.generic {...} ins(%q5, %k) outs(%zero) { mulf; addf }   // S = Q Kᵀ
    %sm = linalg.generic {...} ins(%s) outs(%e) { mulf scale }
    %max = linalg.generic {...} ins(%sm) outs(%ninf) { maximumf }
    ...
    %o5 = linalg.generic {...} ins(%p, %v) outs(%zero) { mulf; addf }  // P V
    %o = tensor.collapse_shape %o5 [[0], [1, 2], [3], [4]]
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FlashDecomposeAggregatesPass : Pass<"flash-decompose-aggregates"> {
  let summary = "Decompose aggregate linalg ops (linalg.softmax) into generics";
  let description = [{
    Applies `linalg::AggregatedOpInterface::decomposeOperation` to every op
    that implements it, so that `linalg.softmax` becomes the reductions and
    elementwise generics that bufferize and lower to loops. Used by
    `--flash-cpu-pipeline`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // FLASH_DIALECT_FLASH_TRANSFORMS_PASSES_TD
