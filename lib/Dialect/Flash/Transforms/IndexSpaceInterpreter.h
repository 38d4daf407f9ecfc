//===- IndexSpaceInterpreter.h - linalg as expressions over P ----*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// Reads the linalg ops producing a tensor as an expression tree over an
// index space (the dims of the attention's probabilities P): elementwise
// ops contribute the arithmetic of their bodies with operands re-indexed
// through the composed maps, reductions over the key axis become Reduce
// nodes, reshapes are views, everything else is a leaf tensor read through
// an affine map. The forward and the gradient matchers both use it.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_TRANSFORMS_INDEXSPACEINTERPRETER_H
#define FLASH_LIB_TRANSFORMS_INDEXSPACEINTERPRETER_H

#include "AttentionMatcher.h"

#include "mlir/IR/AffineExpr.h"
#include "llvm/ADT/DenseSet.h"

#include <deque>

namespace mlir::flash::detail {

struct Expr {
  enum Kind { Leaf, Scalar, Const, Index, Op, Reduce, Softmax } kind;
  Value value;         // Leaf: tensor, Scalar: value
  AffineMap map;       // Leaf: P's space -> tensor dims
  double constant = 0; // Const
  AffineExpr index;    // Index: affine in P's dims
  StringRef name;      // Op: op name; Reduce: "sum" or "max"
  int64_t predicate = 0;
  SmallVector<Expr *, 3> args;
};

class Interpreter {
public:
  Interpreter(MLIRContext *ctx, unsigned rank, unsigned keyDim)
      : ctx(ctx), rank(rank), keyDim(keyDim) {}

  /// The expression of tensor `t` read through `fromP` (P's dims -> t dims).
  Expr *tensor(Value t, AffineMap fromP);

  /// Tensors read as leaves whatever produces them.
  DenseSet<Value> leaves;

  std::string reason;
  llvm::SetVector<Operation *> visited;

private:
  struct Body {
    linalg::LinalgOp op;
    AffineMap loopsFromP;
    Value accumulator;
    DenseMap<Value, Expr *> cache;
  };

  Expr *make(Expr e) {
    arena.push_back(std::move(e));
    return &arena.back();
  }
  Expr *leaf(Value t, AffineMap map) {
    return make({Expr::Leaf, t, map, 0, {}, {}, 0, {}});
  }
  Expr *constant(double c) {
    return make({Expr::Const, {}, {}, c, {}, {}, 0, {}});
  }
  Expr *fail(const Twine &why) {
    if (reason.empty())
      reason = why.str();
    return nullptr;
  }
  Expr *scalar(Value v);
  Expr *linalgResult(linalg::LinalgOp op, OpResult result, AffineMap fromP);
  Expr *bodyValue(Value v, Body &body);
  Expr *bodyOp(Operation *op, Body &body);

  MLIRContext *ctx;
  unsigned rank, keyDim;
  std::deque<Expr> arena;
};

/// Operations the interpreter reads only so that a score modification
/// (softcap, ALiBi, biases from index arithmetic) can be kept symbolic.
bool isScoreModOperation(Operation *op);

/// `v` with extf/truncf stripped.
Value stripFloatCasts(Value v);
unsigned firstReductionDim(linalg::LinalgOp op);
/// Two inputs, one init, one reduction loop (or several, when allowed),
/// projected-permutation maps and a body `out + x * y` (x, y the inputs,
/// possibly converted).
bool isMulAddContraction(linalg::LinalgOp op, bool severalReductions = false);

bool equal(const Expr *a, const Expr *b);
bool isOp(const Expr *e, StringRef name);
Expr *stripCasts(Expr *e);
bool isNegInf(const Expr *e);
bool isConst(const Expr *e, double c);

/// Follows transposes (linalg.transpose, or a generic that yields its input
/// through permutation maps) and casts, so that the fused op reads the
/// original tensor instead of a copy of it.
TensorAccess lookThroughCopies(TensorAccess access);
/// Folds an elementwise `x * c` or `x / c` producing the tensor into `scale`.
TensorAccess lookThroughScaling(TensorAccess access, double &scale);

/// j - i compared with a constant: keep iff lower <= j - i <= upper.
struct Diagonal {
  std::optional<int64_t> lower, upper;
};
/// Reads cmpi(lhs, rhs) on indices as a constraint on j - i.
LogicalResult parseIndexCompare(Expr *cmp, bool keep, unsigned rank,
                                unsigned queryDim, unsigned keyDim,
                                MLIRContext *ctx, Diagonal &d,
                                std::string &reason);

} // namespace mlir::flash::detail

#endif // FLASH_LIB_TRANSFORMS_INDEXSPACEINTERPRETER_H
