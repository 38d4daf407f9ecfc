//===- AttentionMatcher.cpp - find softmax(Q Kᵀ) V in linalg ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "AttentionMatcher.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <deque>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// `v` with extf/truncf stripped.
static Value stripFloatCasts(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

static unsigned firstReductionDim(linalg::LinalgOp op) {
  SmallVector<unsigned> dims;
  op.getReductionDims(dims);
  return dims.front();
}

/// Two inputs, one init, one reduction loop, projected-permutation maps and
/// a body `out + x * y` (x, y the inputs, possibly converted).
static bool isMulAddContraction(linalg::LinalgOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 1 || !op.hasOnlyProjectedPermutations() ||
      op->getNumResults() != 1)
    return false;
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value acc = op.getRegionOutputArgs()[0];
  Value other;
  if (add.getLhs() == acc)
    other = add.getRhs();
  else if (add.getRhs() == acc)
    other = add.getLhs();
  else
    return false;
  auto mul = stripFloatCasts(other).getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = stripFloatCasts(mul.getLhs()), b = stripFloatCasts(mul.getRhs());
  auto inputs = op.getRegionInputArgs();
  return (a == inputs[0] && b == inputs[1]) ||
         (a == inputs[1] && b == inputs[0]);
}

//===----------------------------------------------------------------------===//
// Expressions over P's index space
//===----------------------------------------------------------------------===//

namespace {
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
} // namespace

Expr *Interpreter::scalar(Value v) {
  FloatAttr f;
  if (matchPattern(v, m_Constant(&f)))
    return constant(f.getValueAsDouble());
  IntegerAttr i;
  if (matchPattern(v, m_Constant(&i))) {
    if (v.getType().isInteger(1))
      return constant(i.getValue().getBoolValue());
    return make({Expr::Index,
                 {},
                 {},
                 0,
                 getAffineConstantExpr(i.getInt(), ctx),
                 {},
                 0,
                 {}});
  }
  return make({Expr::Scalar, v, {}, 0, {}, {}, 0, {}});
}

Expr *Interpreter::tensor(Value t, AffineMap fromP) {
  if (!isa<RankedTensorType>(t.getType()))
    return scalar(t);
  // Splat constants (including fills, below) are scalars.
  DenseElementsAttr dense;
  if (matchPattern(t, m_Constant(&dense)) && dense.isSplat()) {
    Type et = dense.getElementType();
    if (isa<FloatType>(et))
      return constant(dense.getSplatValue<APFloat>().convertToDouble());
    if (et.isInteger(1))
      return constant(dense.getSplatValue<bool>());
  }
  Operation *def = t.getDefiningOp();
  if (!def)
    return leaf(t, fromP);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(def))
    return linalgResult(linalgOp, cast<OpResult>(t), fromP);
  if (auto softmax = dyn_cast<linalg::SoftmaxOp>(def)) {
    visited.insert(def);
    AffineExpr axis = fromP.getResult(softmax.getDimension());
    if (axis != getAffineDimExpr(keyDim, ctx))
      return fail("the softmax is not over the key axis that the second "
                  "contraction reduces");
    Expr *x = tensor(softmax.getInput(), fromP);
    if (!x)
      return nullptr;
    return make({Expr::Softmax, {}, {}, 0, {}, "softmax", 0, {x}});
  }
  if (auto cast = dyn_cast<tensor::CastOp>(def)) {
    Expr *e = tensor(cast.getSource(), fromP);
    if (e)
      visited.insert(def);
    return e;
  }
  // Reshapes are views: a merged index is the row-major linearisation of
  // the split ones (torch-mlir's [B*H, M, N] scores around a [B, H, M, N]
  // softmax, TOSA's keep-dims reductions). Every size but the first of a
  // group must be static.
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
    Value src = def->getOperand(0);
    auto srcType = cast<RankedTensorType>(src.getType());
    bool expand = isa<tensor::ExpandShapeOp>(def);
    SmallVector<ReassociationIndices> groups =
        expand ? cast<tensor::ExpandShapeOp>(def).getReassociationIndices()
               : cast<tensor::CollapseShapeOp>(def).getReassociationIndices();
    RankedTensorType wide =
        expand ? cast<RankedTensorType>(t.getType()) : srcType;
    SmallVector<AffineExpr> srcExprs(srcType.getRank());
    for (auto [g, group] : llvm::enumerate(groups)) {
      // Row-major strides of the group's wide dims.
      SmallVector<int64_t> strides(group.size(), 1);
      for (int64_t j = group.size() - 2; j >= 0; --j) {
        int64_t next = wide.getDimSize(group[j + 1]);
        if (ShapedType::isDynamic(next))
          return leaf(t, fromP);
        strides[j] = strides[j + 1] * next;
      }
      if (expand) {
        AffineExpr linear = getAffineConstantExpr(0, ctx);
        for (auto [j, d] : llvm::enumerate(group))
          linear = linear + fromP.getResult(d) * strides[j];
        srcExprs[g] = linear;
        continue;
      }
      AffineExpr merged = fromP.getResult(g);
      for (auto [j, d] : llvm::enumerate(group)) {
        AffineExpr e = merged.floorDiv(strides[j]);
        srcExprs[d] = j == 0 ? e : e % wide.getDimSize(d);
      }
    }
    AffineMap srcMap = simplifyAffineMap(AffineMap::get(rank, 0, srcExprs, ctx));
    Expr *e = tensor(src, srcMap);
    if (e)
      visited.insert(def);
    return e;
  }
  return leaf(t, fromP);
}

Expr *Interpreter::linalgResult(linalg::LinalgOp op, OpResult result,
                                AffineMap fromP) {
  if (!op.hasPureTensorSemantics())
    return leaf(result, fromP);
  AffineMap out = op.getIndexingMapMatchingResult(result);
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  unsigned numReductions = op.getNumReductionLoops();
  bool usesKey = fromP.isFunctionOfDim(keyDim);
  // A reduction is part of the softmax only if it reduces the key axis.
  if (numReductions > 1 || (numReductions == 1 && usesKey))
    return leaf(result, fromP);
  SmallVector<AffineExpr> loops;
  for (auto [l, iter] : llvm::enumerate(iters)) {
    if (iter == utils::IteratorType::reduction) {
      loops.push_back(getAffineDimExpr(keyDim, ctx));
      continue;
    }
    std::optional<unsigned> pos =
        out.getResultPosition(getAffineDimExpr(l, ctx));
    if (!pos)
      return leaf(result, fromP);
    loops.push_back(fromP.getResult(*pos));
  }
  Body body{op, AffineMap::get(rank, 0, loops, ctx), Value(),
            DenseMap<Value, Expr *>()};
  visited.insert(op);
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  Value yielded = yield.getOperand(result.getResultNumber());
  if (numReductions == 0)
    return bodyValue(yielded, body);

  // out = combine(f(inputs), out): a sum or max over the key axis.
  Value acc = op.getRegionOutputArgs()[result.getResultNumber()];
  Operation *combine = yielded.getDefiningOp();
  if (!combine || combine->getNumOperands() != 2)
    return fail("reduction over the key axis is not a sum or a max");
  StringRef kind =
      llvm::TypeSwitch<Operation *, StringRef>(combine)
          .Case<arith::AddFOp>([](auto) { return "sum"; })
          .Case<arith::MaximumFOp, arith::MaxNumFOp>([](auto) { return "max"; })
          .Default([](auto) { return ""; });
  if (kind.empty())
    return fail("reduction over the key axis combines with " +
                combine->getName().getStringRef() + ", not addf or a max");
  Value term = combine->getOperand(0) == acc ? combine->getOperand(1)
                                             : combine->getOperand(0);
  if (term == acc ||
      (combine->getOperand(0) != acc && combine->getOperand(1) != acc))
    return fail("reduction over the key axis does not accumulate");
  body.accumulator = acc;
  Expr *f = bodyValue(term, body);
  if (!f)
    return nullptr;
  // The initial value must be the identity of the reduction.
  OpOperand *initOperand = op.getDpsInitOperand(result.getResultNumber());
  Expr *init = tensor(initOperand->get(), fromP);
  if (!init || init->kind != Expr::Const)
    return fail("reduction over the key axis starts from a non-constant");
  double c = init->constant;
  bool identity = kind == "sum"
                      ? c == 0.0
                      : (c == -std::numeric_limits<double>::infinity() ||
                         c <= -std::numeric_limits<float>::max() ||
                         (std::isnan(c) && isa<arith::MaxNumFOp>(combine)));
  if (!identity)
    return fail("reduction over the key axis starts from " + std::to_string(c) +
                ", not its identity");
  return make({Expr::Reduce, {}, {}, 0, {}, kind, 0, {f}});
}

Expr *Interpreter::bodyValue(Value v, Body &body) {
  if (auto it = body.cache.find(v); it != body.cache.end())
    return it->second;
  Expr *e = nullptr;
  if (v == body.accumulator) {
    return fail("the accumulator of a reduction is used inside its term");
  } else if (auto arg = dyn_cast<BlockArgument>(v);
             arg && arg.getOwner() == body.op.getBlock()) {
    OpOperand *operand = body.op.getMatchingOpOperand(arg);
    if (!isa<RankedTensorType>(operand->get().getType())) {
      e = scalar(operand->get());
    } else {
      AffineMap m = body.op.getMatchingIndexingMap(operand);
      e = tensor(operand->get(), m.compose(body.loopsFromP));
    }
  } else if (Operation *def = v.getDefiningOp();
             def && def->getBlock() == body.op.getBlock()) {
    e = bodyOp(def, body);
  } else {
    e = scalar(v);
  }
  if (e)
    body.cache[v] = e;
  return e;
}

Expr *Interpreter::bodyOp(Operation *op, Body &body) {
  if (auto index = dyn_cast<linalg::IndexOp>(op))
    return make({Expr::Index,
                 {},
                 {},
                 0,
                 body.loopsFromP.getResult(index.getDim()),
                 {},
                 0,
                 {}});
  if (matchPattern(op, m_Constant()))
    return scalar(op->getResult(0));
  SmallVector<Expr *, 3> args;
  for (Value operand : op->getOperands()) {
    Expr *a = bodyValue(operand, body);
    if (!a)
      return nullptr;
    args.push_back(a);
  }
  // Index arithmetic stays affine.
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::IndexCastOp>(
          op) &&
      llvm::all_of(args, [](Expr *a) { return a->kind == Expr::Index; })) {
    AffineExpr r = llvm::TypeSwitch<Operation *, AffineExpr>(op)
                       .Case<arith::AddIOp>([&](auto) {
                         return args[0]->index + args[1]->index;
                       })
                       .Case<arith::SubIOp>([&](auto) {
                         return args[0]->index - args[1]->index;
                       })
                       .Case<arith::MulIOp>([&](auto) {
                         return args[0]->index * args[1]->index;
                       })
                       .Default([&](auto) { return args[0]->index; });
    return make({Expr::Index, {}, {}, 0, r, {}, 0, {}});
  }
  bool supported =
      isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
          arith::MaximumFOp, arith::MaxNumFOp, arith::NegFOp, arith::SelectOp,
          arith::CmpFOp, arith::CmpIOp, arith::ExtFOp, arith::TruncFOp,
          arith::AndIOp, arith::OrIOp, arith::XOrIOp, math::ExpOp,
          math::Exp2Op>(op);
  if (!supported)
    return fail("unsupported operation " + op->getName().getStringRef() +
                " in the softmax chain");
  int64_t predicate = 0;
  if (auto cmp = dyn_cast<arith::CmpIOp>(op))
    predicate = static_cast<int64_t>(cmp.getPredicate());
  if (auto cmp = dyn_cast<arith::CmpFOp>(op))
    predicate = static_cast<int64_t>(cmp.getPredicate());
  return make(
      {Expr::Op, {}, {}, 0, {}, op->getName().getStringRef(), predicate, args});
}

//===----------------------------------------------------------------------===//
// Recognition
//===----------------------------------------------------------------------===//

static bool equal(const Expr *a, const Expr *b) {
  if (a == b)
    return true;
  if (a->kind != b->kind || a->value != b->value || a->map != b->map ||
      a->name != b->name || a->predicate != b->predicate ||
      a->index != b->index || a->args.size() != b->args.size())
    return false;
  if (a->kind == Expr::Const && a->constant != b->constant &&
      !(std::isnan(a->constant) && std::isnan(b->constant)))
    return false;
  for (auto [x, y] : llvm::zip(a->args, b->args))
    if (!equal(x, y))
      return false;
  return true;
}

static bool isOp(const Expr *e, StringRef name) {
  return e && e->kind == Expr::Op && e->name == name;
}

static Expr *stripCasts(Expr *e) {
  while (isOp(e, "arith.extf") || isOp(e, "arith.truncf"))
    e = e->args[0];
  return e;
}

static bool isNegInf(const Expr *e) {
  return e->kind == Expr::Const &&
         e->constant == -std::numeric_limits<double>::infinity();
}

static bool isConst(const Expr *e, double c) {
  return e->kind == Expr::Const && e->constant == c;
}

static bool isScoreLeaf(const Expr *e) {
  if (e->kind != Expr::Leaf || !e->map.isPermutation())
    return false;
  auto op = e->value.getDefiningOp<linalg::LinalgOp>();
  return op && isMulAddContraction(op);
}

static bool dependsOnScores(const Expr *e) {
  if (isScoreLeaf(e))
    return true;
  return llvm::any_of(e->args, dependsOnScores);
}

namespace {
struct ScoreTerms {
  Expr *scores = nullptr;
  double scale = 1.0;
  SmallVector<std::pair<Expr *, double>> biases;
  SmallVector<std::pair<Expr *, bool>> masks;
};
} // namespace

/// Splits `x` (in units of natural-log scores times `factor`) into
/// factor * scale * S + biases, with masking selects.
static LogicalResult parseScores(Expr *x, double factor, ScoreTerms &t,
                                 std::string &reason) {
  auto fail = [&](const Twine &why) {
    if (reason.empty())
      reason = why.str();
    return failure();
  };
  x = stripCasts(x);
  if (isScoreLeaf(x)) {
    if (t.scores)
      return fail("the scores appear twice in the softmax input");
    t.scores = x;
    t.scale = factor;
    return success();
  }
  if (x->kind != Expr::Op)
    return fail("the softmax input does not come from a contraction Q Kᵀ");
  Expr *a = x->args.size() > 0 ? x->args[0] : nullptr;
  Expr *b = x->args.size() > 1 ? x->args[1] : nullptr;
  if (x->name == "arith.select") {
    Expr *c = x->args[0], *yes = x->args[1], *no = x->args[2];
    for (auto [fill, kept, keepWhenTrue] :
         {std::tuple(no, yes, true), std::tuple(yes, no, false)}) {
      Expr *f = stripCasts(fill);
      if (f->kind != Expr::Const)
        continue;
      if (!isNegInf(f))
        return fail("the mask fills masked scores with " +
                    std::to_string(f->constant) +
                    " instead of -inf: fully masked rows would average "
                    "instead of giving 0");
      if (factor <= 0)
        return fail("a mask is applied before a negative scale");
      t.masks.push_back({c, keepWhenTrue});
      return parseScores(kept, factor, t, reason);
    }
    return fail("a select on the scores is not a mask with -inf");
  }
  if (x->name == "arith.addf" || x->name == "arith.subf") {
    bool da = dependsOnScores(a), db = dependsOnScores(b);
    if (da == db)
      return fail(da ? "the scores are added to themselves"
                     : "the softmax input does not depend on Q Kᵀ");
    double sign = x->name == "arith.subf" ? -1.0 : 1.0;
    if (da) {
      t.biases.push_back({b, sign * factor});
      return parseScores(a, factor, t, reason);
    }
    if (sign < 0)
      return fail("the scores are subtracted from a bias");
    t.biases.push_back({a, factor});
    return parseScores(b, factor, t, reason);
  }
  if (x->name == "arith.mulf" || x->name == "arith.divf") {
    Expr *ca = stripCasts(a), *cb = stripCasts(b);
    bool div = x->name == "arith.divf";
    if (cb->kind == Expr::Const)
      return parseScores(a, div ? factor / cb->constant : factor * cb->constant,
                         t, reason);
    if (!div && ca->kind == Expr::Const)
      return parseScores(b, factor * ca->constant, t, reason);
    if (cb->kind == Expr::Scalar || ca->kind == Expr::Scalar)
      return fail("the scores are scaled by a value known only at run time");
    return fail("the scores are multiplied by a tensor");
  }
  if (x->name == "arith.negf")
    return parseScores(a, -factor, t, reason);
  return fail("unsupported operation " + x->name + " on the scores");
}

/// Follows transposes (linalg.transpose, or a generic that yields its input
/// through permutation maps) and casts, so that the fused op reads the
/// original tensor instead of a copy of it.
static TensorAccess lookThroughCopies(TensorAccess access) {
  while (Operation *def = access.tensor.getDefiningOp()) {
    if (auto cast = dyn_cast<tensor::CastOp>(def)) {
      access.tensor = cast.getSource();
      continue;
    }
    auto op = dyn_cast<linalg::LinalgOp>(def);
    if (!op || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
        !op.isAllParallelLoops() || !op.hasPureTensorSemantics())
      break;
    auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
    if (yield.getOperand(0) != op.getRegionInputArgs()[0])
      break;
    AffineMap in = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
    AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
    if (!in.isPermutation() || !out.isPermutation())
      break;
    // access: ext -> result dims; result dims -> loops -> input dims.
    access.map = in.compose(inversePermutation(out)).compose(access.map);
    access.tensor = op.getDpsInputOperand(0)->get();
  }
  return access;
}

/// Folds an elementwise `x * c` or `x / c` producing Q or K into the scale.
static TensorAccess lookThroughScaling(TensorAccess access, double &scale) {
  auto op = access.tensor.getDefiningOp<linalg::LinalgOp>();
  if (!op || op.getNumDpsInputs() < 1 || op->getNumResults() != 1 ||
      !op.isAllParallelLoops() || !op.hasPureTensorSemantics())
    return access;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  Operation *def = yield.getOperand(0).getDefiningOp();
  if (!isa_and_nonnull<arith::MulFOp, arith::DivFOp>(def))
    return access;
  Value input = op.getRegionInputArgs()[0];
  Value other;
  if (def->getOperand(0) == input)
    other = def->getOperand(1);
  else if (isa<arith::MulFOp>(def) && def->getOperand(1) == input)
    other = def->getOperand(0);
  else
    return access;
  // The factor: a constant, or a splat-constant second input.
  auto inputs = op.getRegionInputArgs();
  if (inputs.size() == 2 && other == inputs[1])
    other = op.getDpsInputOperand(1)->get();
  else if (inputs.size() != 1)
    return access;
  FloatAttr f;
  DenseElementsAttr d;
  double c;
  if (matchPattern(other, m_Constant(&f)))
    c = f.getValueAsDouble();
  else if (matchPattern(other, m_Constant(&d)) && d.isSplat() &&
           isa<FloatType>(d.getElementType()))
    c = d.getSplatValue<APFloat>().convertToDouble();
  else
    return access;
  AffineMap in = op.getMatchingIndexingMap(op.getDpsInputOperand(0));
  AffineMap out = op.getIndexingMapMatchingResult(op->getResult(0));
  if (!in.isPermutation() || !out.isPermutation())
    return access;
  scale *= isa<arith::DivFOp>(def) ? 1.0 / c : c;
  return {op.getDpsInputOperand(0)->get(),
          in.compose(inversePermutation(out)).compose(access.map)};
}

namespace {
/// j - i compared with a constant: keep iff lower <= j - i <= upper.
struct Diagonal {
  std::optional<int64_t> lower, upper;
};
} // namespace

/// Evaluates an affine expression of P's dims at a point.
static int64_t evaluate(AffineExpr e, ArrayRef<int64_t> point,
                        MLIRContext *ctx) {
  AffineMap m = AffineMap::get(point.size(), 0, e, ctx);
  return m.compose(point).front();
}

/// Reads cmpi(lhs, rhs) on indices as a constraint on j - i.
static LogicalResult parseIndexCompare(Expr *cmp, bool keep, unsigned rank,
                                       unsigned queryDim, unsigned keyDim,
                                       MLIRContext *ctx, Diagonal &d,
                                       std::string &reason) {
  Expr *lhs = cmp->args[0], *rhs = cmp->args[1];
  if (lhs->kind != Expr::Index || rhs->kind != Expr::Index) {
    reason = "an integer comparison in a mask is not on indices";
    return failure();
  }
  AffineExpr diff = lhs->index - rhs->index;
  if (!diff.isPureAffine()) {
    reason = "an index mask is not affine in the query and key indices";
    return failure();
  }
  SmallVector<int64_t> zero(rank, 0);
  int64_t c = evaluate(diff, zero, ctx);
  SmallVector<int64_t> coeff(rank);
  for (unsigned i = 0; i < rank; ++i) {
    SmallVector<int64_t> unit(rank, 0);
    unit[i] = 1;
    coeff[i] = evaluate(diff, unit, ctx) - c;
    if (i != queryDim && i != keyDim && coeff[i] != 0) {
      reason = "an index mask depends on a batch index";
      return failure();
    }
  }
  int64_t alpha = coeff[keyDim];
  if ((alpha != 1 && alpha != -1) || coeff[queryDim] != -alpha) {
    reason = "an index mask is not a diagonal (j - i compared with a constant)";
    return failure();
  }
  // pred(alpha (j - i) + c, 0); normalise to bounds on j - i.
  using P = arith::CmpIPredicate;
  auto pred = static_cast<P>(cmp->predicate);
  if (pred == P::eq || pred == P::ne) {
    reason = "an index mask compares for equality";
    return failure();
  }
  bool greater =
      pred == P::sgt || pred == P::ugt || pred == P::sge || pred == P::uge;
  bool strict =
      pred == P::sgt || pred == P::ugt || pred == P::slt || pred == P::ult;
  if (!keep) {
    greater = !greater;
    strict = !strict;
  }
  // alpha (j - i) + c > 0 (or >=) when greater; flip by alpha.
  if (alpha < 0) {
    greater = !greater;
    c = -c;
  }
  // Now: (j - i) + c [>|>=|<|<=] 0.
  if (greater) {
    int64_t bound = strict ? 1 - c : -c;
    d.lower = d.lower ? std::max(*d.lower, bound) : bound;
  } else {
    int64_t bound = strict ? -c - 1 : -c;
    d.upper = d.upper ? std::min(*d.upper, bound) : bound;
  }
  return success();
}

std::optional<AttentionMatch>
mlir::flash::detail::matchAttention(linalg::LinalgOp pv, std::string &reason,
                                    bool &looksLikeAttention,
                                    bool allowProbsUsers) {
  looksLikeAttention = false;
  if (!isMulAddContraction(pv) || !pv.hasPureTensorSemantics())
    return std::nullopt;
  MLIRContext *ctx = pv.getContext();
  unsigned reductionLoop = firstReductionDim(pv);

  // Which input is P: the one whose producers contain an exponential.
  for (unsigned pIdx = 0; pIdx < 2; ++pIdx) {
    OpOperand *pOperand = pv.getDpsInputOperand(pIdx);
    OpOperand *vOperand = pv.getDpsInputOperand(1 - pIdx);
    auto pType = dyn_cast<RankedTensorType>(pOperand->get().getType());
    if (!pType)
      continue;
    unsigned rank = pType.getRank();
    AffineMap pMap = pv.getMatchingIndexingMap(pOperand);
    std::optional<unsigned> keyPos =
        pMap.getResultPosition(getAffineDimExpr(reductionLoop, ctx));
    if (!keyPos)
      continue;
    unsigned keyDim = *keyPos;

    Interpreter interp(ctx, rank, keyDim);
    Expr *p = interp.tensor(pOperand->get(),
                            AffineMap::getMultiDimIdentityMap(rank, ctx));
    if (!p) {
      // Only report chains that reach an exponential or a softmax.
      bool sawExp = llvm::any_of(interp.visited, [](Operation *op) {
        bool exp = isa<linalg::SoftmaxOp>(op);
        op->walk([&](Operation *inner) {
          exp |= isa<math::ExpOp, math::Exp2Op>(inner);
        });
        return exp;
      });
      if (sawExp) {
        looksLikeAttention = true;
        reason = interp.reason;
      }
      continue;
    }

    // P = exp(x - max x) / sum exp(x - max x), in any of its spellings.
    Expr *probs = stripCasts(p);
    Expr *e = nullptr, *sum = nullptr;
    AttentionMatch m;
    bool softmaxLike = false;
    if (probs->kind == Expr::Softmax) {
      softmaxLike = true;
      m.namedSoftmax = true;
      m.maxSubtracted = true;
      e = probs;
    } else if (isOp(probs, "arith.divf")) {
      e = probs->args[0];
      sum = probs->args[1];
    } else if (isOp(probs, "arith.mulf")) {
      for (unsigned i = 0; i < 2 && !sum; ++i) {
        Expr *r = stripCasts(probs->args[1 - i]);
        if (isOp(r, "arith.divf") && isConst(stripCasts(r->args[0]), 1.0)) {
          e = probs->args[i];
          sum = r->args[1];
        }
      }
    }
    Expr *exponent = nullptr;
    if (e && e->kind != Expr::Softmax) {
      Expr *exp = stripCasts(e);
      if (isOp(exp, "math.exp") || isOp(exp, "math.exp2")) {
        softmaxLike = true;
        m.base2 = exp->name == "math.exp2";
        exponent = exp->args[0];
      }
    }
    looksLikeAttention |= softmaxLike;
    if (!softmaxLike) {
      // An exponential without normalisation, or no exponential at all.
      std::function<bool(Expr *)> hasExp = [&](Expr *x) {
        return isOp(x, "math.exp") || isOp(x, "math.exp2") ||
               llvm::any_of(x->args, hasExp);
      };
      if (hasExp(probs)) {
        looksLikeAttention = true;
        reason = "the exponentials are not normalised by their sum over the "
                 "key axis";
      }
      continue;
    }
    if (e->kind != Expr::Softmax) {
      Expr *s = stripCasts(sum);
      if (!exponent || !s || s->kind != Expr::Reduce || s->name != "sum" ||
          !equal(stripCasts(s->args[0]), stripCasts(e))) {
        reason = "the exponentials are not normalised by their sum over the "
                 "key axis";
        continue;
      }
    }

    // The exponent: x - max x, x alone, or (x - max x) * c for exp2.
    Expr *x = nullptr;
    double factor = 1.0;
    if (e->kind == Expr::Softmax) {
      x = e->args[0];
    } else {
      Expr *d = stripCasts(exponent);
      if (isOp(d, "arith.mulf")) {
        Expr *c0 = stripCasts(d->args[0]), *c1 = stripCasts(d->args[1]);
        if (c1->kind == Expr::Const) {
          factor = c1->constant;
          d = stripCasts(d->args[0]);
        } else if (c0->kind == Expr::Const) {
          factor = c0->constant;
          d = stripCasts(d->args[1]);
        }
      }
      x = d;
      if (isOp(d, "arith.subf")) {
        Expr *mx = stripCasts(d->args[1]);
        if (mx->kind == Expr::Reduce && mx->name == "max" &&
            equal(stripCasts(mx->args[0]), stripCasts(d->args[0]))) {
          m.maxSubtracted = true;
          x = d->args[0];
        }
      }
      if (m.base2)
        factor *= std::log(2.0);
    }

    ScoreTerms terms;
    if (failed(parseScores(x, factor, terms, reason)))
      continue;

    // Q Kᵀ: which operand is Q (it carries the query axis).
    auto qk = cast<linalg::LinalgOp>(terms.scores->value.getDefiningOp());
    AffineMap sMap =
        qk.getIndexingMapMatchingResult(cast<OpResult>(terms.scores->value));
    unsigned headLoop = firstReductionDim(qk);
    // qk loop -> extended dim (P's dims, head = rank).
    SmallVector<int64_t> qkLoopToExt(qk.getNumLoops(), -1);
    for (unsigned sDim = 0; sDim < rank; ++sDim) {
      unsigned pDim =
          cast<AffineDimExpr>(terms.scores->map.getResult(sDim)).getPosition();
      unsigned loop = cast<AffineDimExpr>(sMap.getResult(sDim)).getPosition();
      qkLoopToExt[loop] = pDim;
    }
    qkLoopToExt[headLoop] = rank;
    auto toExt = [&](AffineMap map,
                     ArrayRef<int64_t> loopToExt) -> std::optional<AffineMap> {
      SmallVector<AffineExpr> exprs;
      for (AffineExpr r : map.getResults()) {
        auto dim = dyn_cast<AffineDimExpr>(r);
        if (!dim || loopToExt[dim.getPosition()] < 0)
          return std::nullopt;
        exprs.push_back(getAffineDimExpr(loopToExt[dim.getPosition()], ctx));
      }
      return AffineMap::get(rank + 1, 0, exprs, ctx);
    };
    if (llvm::is_contained(qkLoopToExt, -1)) {
      reason = "Q Kᵀ has loops that the scores do not index";
      continue;
    }
    m.rank = rank;
    m.keyDim = keyDim;
    m.scores = qk;
    m.output = pv;
    // The query axis is the P dim (other than the key) that pv's output
    // keeps and Q reads; batch dims are read by everything.
    std::optional<AffineMap> a0 =
        toExt(qk.getMatchingIndexingMap(qk.getDpsInputOperand(0)), qkLoopToExt);
    std::optional<AffineMap> a1 =
        toExt(qk.getMatchingIndexingMap(qk.getDpsInputOperand(1)), qkLoopToExt);
    if (!a0 || !a1) {
      reason = "Q Kᵀ reads its operands through non-trivial maps";
      continue;
    }
    bool firstIsQuery = !a0->isFunctionOfDim(keyDim);
    AffineMap qMap = firstIsQuery ? *a0 : *a1, kMap = firstIsQuery ? *a1 : *a0;
    if (qMap.isFunctionOfDim(keyDim) || !kMap.isFunctionOfDim(keyDim)) {
      reason = "Q Kᵀ does not separate the query and key axes";
      continue;
    }
    std::optional<unsigned> queryDim;
    for (unsigned d = 0; d < rank; ++d)
      if (d != keyDim && qMap.isFunctionOfDim(d) && !kMap.isFunctionOfDim(d))
        queryDim = d;
    if (!queryDim) {
      reason = "Q Kᵀ has no query axis";
      continue;
    }
    m.queryDim = *queryDim;
    for (unsigned d = 0; d < rank; ++d)
      if (d != keyDim && d != *queryDim)
        m.batchDims.push_back(d);
    double operandScale = 1.0;
    m.query = lookThroughCopies(lookThroughScaling(
        lookThroughCopies(
            {qk.getDpsInputOperand(firstIsQuery ? 0 : 1)->get(), qMap}),
        operandScale));
    m.key = lookThroughCopies(lookThroughScaling(
        lookThroughCopies(
            {qk.getDpsInputOperand(firstIsQuery ? 1 : 0)->get(), kMap}),
        operandScale));

    // P V: loop -> extended dim (value dim = rank).
    SmallVector<int64_t> pvLoopToExt(pv.getNumLoops(), -1);
    for (auto [pDim, r] : llvm::enumerate(pMap.getResults()))
      pvLoopToExt[cast<AffineDimExpr>(r).getPosition()] = pDim;
    unsigned valueLoops = 0;
    for (auto &l : pvLoopToExt)
      if (l < 0) {
        l = rank;
        ++valueLoops;
      }
    std::optional<AffineMap> vMap =
        toExt(pv.getMatchingIndexingMap(vOperand), pvLoopToExt);
    std::optional<AffineMap> oMap =
        toExt(pv.getIndexingMapMatchingResult(pv->getResult(0)), pvLoopToExt);
    if (valueLoops != 1 || !vMap || !oMap) {
      reason = "P V is not a contraction with one value dimension";
      continue;
    }
    if (vMap->isFunctionOfDim(*queryDim) || !vMap->isFunctionOfDim(keyDim)) {
      reason = "the second contraction does not read V by key";
      continue;
    }
    m.value = lookThroughCopies({vOperand->get(), *vMap});
    m.outputMap = *oMap;
    m.scale = terms.scale * operandScale;

    // Biases: tensors, or additive masks select(c, 0, -inf).
    bool ok = true;
    SmallVector<std::pair<Expr *, bool>> masks = terms.masks;
    for (auto [bias, f] : terms.biases) {
      Expr *b = stripCasts(bias);
      if (b->kind == Expr::Const && b->constant == 0.0)
        continue;
      if (b->kind == Expr::Leaf) {
        m.biases.push_back({{b->value, b->map}, f});
        continue;
      }
      if (isOp(b, "arith.select")) {
        Expr *yes = stripCasts(b->args[1]), *no = stripCasts(b->args[2]);
        if (isConst(yes, 0.0) && isNegInf(no) && f > 0) {
          masks.push_back({b->args[0], true});
          continue;
        }
        if (isNegInf(yes) && isConst(no, 0.0) && f > 0) {
          masks.push_back({b->args[0], false});
          continue;
        }
      }
      reason = "the score bias is computed, not read from a tensor";
      ok = false;
      break;
    }
    if (!ok)
      continue;

    // Masks: i1 tensors, conjunctions, and diagonals on indices.
    Diagonal diag;
    while (ok && !masks.empty()) {
      auto [c, keep] = masks.pop_back_val();
      c = stripCasts(c);
      if (c->kind == Expr::Leaf && c->value.getType() &&
          cast<ShapedType>(c->value.getType()).getElementType().isInteger(1)) {
        m.masks.push_back({{c->value, c->map}, keep});
      } else if (isOp(c, "arith.xori") &&
                 (isConst(c->args[1], 1.0) || isConst(c->args[0], 1.0))) {
        masks.push_back(
            {isConst(c->args[1], 1.0) ? c->args[0] : c->args[1], !keep});
      } else if ((isOp(c, "arith.andi") && keep) ||
                 (isOp(c, "arith.ori") && !keep)) {
        masks.push_back({c->args[0], keep});
        masks.push_back({c->args[1], keep});
      } else if (isOp(c, "arith.cmpi")) {
        ok = succeeded(parseIndexCompare(c, keep, rank, *queryDim, keyDim, ctx,
                                         diag, reason));
      } else {
        reason = "a mask condition is neither an i1 tensor nor a diagonal on "
                 "the query and key indices";
        ok = false;
      }
    }
    if (!ok)
      continue;
    if (diag.lower || diag.upper) {
      // flash.attention keeps j - i <= N - M (causal) and j - i >= N - M - W.
      auto qType = cast<ShapedType>(m.query.tensor.getType());
      auto kType = cast<ShapedType>(m.key.tensor.getType());
      int64_t querySeq = qType.getDimSize(
          *qMap.getResultPosition(getAffineDimExpr(*queryDim, ctx)));
      int64_t keySeq = kType.getDimSize(
          *kMap.getResultPosition(getAffineDimExpr(keyDim, ctx)));
      std::optional<int64_t> offset;
      if (!ShapedType::isDynamic(querySeq) && !ShapedType::isDynamic(keySeq))
        offset = keySeq - querySeq;
      if (diag.upper) {
        if (!offset) {
          reason = "a causal mask on dynamic sequence lengths cannot be "
                   "proven to align bottom-right (j <= i + N - M)";
          continue;
        }
        if (*diag.upper != *offset) {
          reason =
              "the causal diagonal j - i <= " + std::to_string(*diag.upper) +
              " is not flash.attention's bottom-right alignment "
              "(N - M = " +
              std::to_string(*offset) + ")";
          continue;
        }
        m.causal = true;
      }
      if (diag.lower) {
        if (!offset || *offset - *diag.lower < 0) {
          reason = "a sliding-window mask does not end at the bottom-right "
                   "diagonal";
          continue;
        }
        m.window = *offset - *diag.lower;
      }
    }

    // Both contractions must start from zero (a non-zero init is a bias).
    auto isZero = [](Value init) {
      Value scalar;
      if (auto fill = init.getDefiningOp<linalg::FillOp>())
        scalar = fill.getDpsInputOperand(0)->get();
      FloatAttr f;
      DenseElementsAttr d;
      if (scalar)
        return matchPattern(scalar, m_Constant(&f)) && f.getValue().isZero();
      return matchPattern(init, m_Constant(&d)) && d.isSplat() &&
             isa<FloatType>(d.getElementType()) &&
             d.getSplatValue<APFloat>().isZero();
    };
    if (!isZero(qk.getDpsInitOperand(0)->get()) ||
        !isZero(pv.getDpsInitOperand(0)->get())) {
      reason = "a contraction accumulates into a tensor that is not zero";
      continue;
    }

    // Every intermediate must serve only this attention.
    m.chain = interp.visited;
    m.chain.insert(qk);
    m.probs = pOperand->get();
    for (Operation *op : m.chain) {
      // Fills are cheap and often shared between inits; they stay if used.
      if (isa<linalg::FillOp>(op))
        continue;
      for (OpOperand &use : op->getUses()) {
        Operation *user = use.getOwner();
        if (allowProbsUsers && use.get() == m.probs)
          continue;
        if (user != pv && !m.chain.contains(user)) {
          reason = "an intermediate (" + op->getName().getStringRef().str() +
                   ") has users outside the attention";
          ok = false;
        }
      }
    }
    if (!ok)
      continue;
    return m;
  }
  return std::nullopt;
}
