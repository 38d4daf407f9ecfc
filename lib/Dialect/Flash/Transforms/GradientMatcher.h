//===- GradientMatcher.h - find attention's backward in linalg ---*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// Recognises the backward of a matched attention as autodiff writes it from
// the saved probabilities P: dV = Pᵀ dO, dP = dO Vᵀ, dS = P (dP - rowsum(P
// dP)) (in any spelling, times any constant), dQ = dS K, dK = dSᵀ Q. The
// consumers of P are followed forward; the input of each contraction that
// reads a tensor computed from P is interpreted over P's index space and
// checked, by evaluating it, to be the softmax gradient.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_GRADIENTMATCHER_H
#define FLASH_LIB_TRANSFORMS_GRADIENTMATCHER_H

#include "AttentionMatcher.h"

namespace mlir::flash::detail {

/// One gradient contraction: its op, its result read from the extended
/// space (P's dims plus the head or value dim), its second operand (dO, K
/// or Q) as read from the extended space, and `factor` such that its input
/// is `factor` times the true operand (dS = P (dP - rowsum(P dP)), or P).
struct GradientContraction {
  linalg::LinalgOp op;
  AffineMap resultMap;
  TensorAccess operand;
  double factor = 1.0;
  explicit operator bool() const { return static_cast<bool>(op); }
};

struct GradientMatch {
  GradientContraction gradValue, gradQuery, gradKey;
  /// dP = dO Vᵀ: dO and V as its contraction reads them.
  TensorAccess gradOutput, value;
  /// Ops that compute only the gradients (erased once dead).
  llvm::SetVector<Operation *> chain;
};

/// Matches the users of `probs` (P of the forward `m`, or a block argument
/// standing for it) other than `m.output` as the backward of attention over
/// P's index space. Every such user must be part of it; at least one of dQ,
/// dK must be present. The gradient may zero entries that the forward masks
/// (select(mask, dS, 0), the backward of the mask).
std::optional<GradientMatch> matchAttentionGradient(Value probs,
                                                    const AttentionMatch &m,
                                                    std::string &reason);

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_GRADIENTMATCHER_H
