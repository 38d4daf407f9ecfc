//===- AttentionMatcher.h - find softmax(Q Kᵀ) V in linalg ------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// Recognises attention by meaning, not by op names. Starting from a
// candidate second contraction O = P V, the producers of P are interpreted
// into a small expression tree over the "canonical" index space of P (its
// own dimensions): elementwise linalg ops (generic or named) contribute the
// arithmetic of their bodies, reductions over the key axis become Reduce
// nodes, linalg.softmax a Softmax node, and everything else is a leaf
// tensor read through an affine map from the canonical space. The tree is
// then matched against softmax(scale * S + bias, masks) with S = Q Kᵀ.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_ATTENTIONMATCHER_H
#define FLASH_LIB_TRANSFORMS_ATTENTIONMATCHER_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/SetVector.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::flash::detail {

struct Expr;
class Interpreter;

/// A tensor read through `map` from the extended canonical space: dims
/// [0, rank) are P's dimensions, dim `rank` is the head (or value) dimension.
struct TensorAccess {
  Value tensor;
  AffineMap map;
};

struct AttentionMatch {
  linalg::LinalgOp scores; // S = Q Kᵀ
  linalg::LinalgOp output; // O = P V
  unsigned rank = 0;       // rank of P
  unsigned queryDim = 0, keyDim = 0;
  SmallVector<unsigned> batchDims;
  TensorAccess query, key, value;
  /// The result of `output` read from the extended space without the key
  /// dimension (P's dims with keyDim standing for the value dimension).
  AffineMap outputMap;
  double scale = 1.0;
  /// A factor of the scores known only at run time (a scalar f32 that the
  /// scores are multiplied by, or divided by when `divideByRuntimeScale`),
  /// applied to Q Kᵀ before any bias or mask; the scale is then
  /// `scale * runtimeScale` (or `scale / runtimeScale`).
  Value runtimeScale;
  bool divideByRuntimeScale = false;
  /// Additive score terms (read from P's space) and their factors.
  SmallVector<std::pair<TensorAccess, double>> biases;
  /// i1 tensors and whether `true` keeps the score.
  SmallVector<std::pair<TensorAccess, bool>> masks;
  bool causal = false;
  std::optional<int64_t> window;
  /// Bounds on j - i of the kept scores (causal and window as parsed).
  std::pair<std::optional<int64_t>, std::optional<int64_t>> keptDiagonal;
  /// A modification of the scores kept symbolic (the fused op's score_mod):
  /// the softmax input is `modFactor * g(scale * S) + sum f_k t_k` (plus the
  /// tensor biases and masks), with `g` an expression tree over P's space
  /// whose score leaves stand for scale * S (null when g is the identity)
  /// and the terms t_k trees that do not depend on S (ALiBi, a bias from
  /// index arithmetic). Neither reads a tensor over both the query and the
  /// key axis.
  Expr *modified = nullptr;
  double modFactor = 1.0;
  /// The factor of the score leaves of `g` that the region's scaled score
  /// stands for (`scale` also folds the factors of Q and K).
  double modScoreFactor = 1.0;
  SmallVector<std::pair<Expr *, double>> modTerms;
  /// Owns the trees.
  std::shared_ptr<Interpreter> exprs;
  /// Set when the fusion split batch dim `first` of the match by `second`
  /// (see buildFusedAttention): the trees still read the unsplit dim.
  std::optional<std::pair<unsigned, int64_t>> splitOf;
  bool hasScoreMod() const { return modified || !modTerms.empty(); }

  bool maxSubtracted = false;
  bool base2 = false;
  bool namedSoftmax = false;
  /// P as the second contraction reads it.
  Value probs;
  /// Ops that compute only the fused value (erased after fusion).
  llvm::SetVector<Operation *> chain;
};

/// c when `e` is c * S (S the matched scores Q Kᵀ) through constant factors
/// and casts.
std::optional<double> scaledScoreFactor(Expr *e);

/// Tries to match attention ending in the contraction `candidate`. On
/// failure returns nullopt and sets `reason`; `looksLikeAttention` tells
/// whether the candidate had a softmax-like operand at all (only those are
/// worth reporting). With `allowProbsUsers`, P itself may have users
/// outside the attention (the backward reads it).
std::optional<AttentionMatch> matchAttention(linalg::LinalgOp candidate,
                                             std::string &reason,
                                             bool &looksLikeAttention,
                                             bool allowProbsUsers = false);

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_ATTENTIONMATCHER_H
