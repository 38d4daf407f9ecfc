//===- IndexSpaceInterpreter.cpp - linalg as expressions over P --*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "IndexSpaceInterpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// `v` with extf/truncf stripped.
Value mlir::flash::detail::stripFloatCasts(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::ExtFOp, arith::TruncFOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

unsigned mlir::flash::detail::firstReductionDim(linalg::LinalgOp op) {
  SmallVector<unsigned> dims;
  op.getReductionDims(dims);
  return dims.front();
}

/// Two inputs, one init, one reduction loop, projected-permutation maps and
/// a body `out + x * y` (x, y the inputs, possibly converted).
bool mlir::flash::detail::isMulAddContraction(linalg::LinalgOp op,
                                              bool severalReductions) {
  unsigned reductions = op.getNumReductionLoops();
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      reductions == 0 || (reductions > 1 && !severalReductions) ||
      !op.hasOnlyProjectedPermutations() || op->getNumResults() != 1)
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

/// The value of index arithmetic on constants and static sizes (the
/// decomposition's `N - M` before any folding), if it is one.
static std::optional<int64_t> foldIndex(Value v, unsigned depth = 0) {
  IntegerAttr i;
  if (matchPattern(v, m_Constant(&i)))
    return i.getInt();
  // Arithmetic in 64 bits: narrower integers would wrap where this does not.
  if (!v.getType().isIndex() && !v.getType().isInteger(64))
    return std::nullopt;
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return std::nullopt;
  if (auto dim = dyn_cast<tensor::DimOp>(def)) {
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    std::optional<int64_t> d = foldIndex(dim.getIndex(), depth + 1);
    if (!type || !d || *d < 0 || *d >= type.getRank() ||
        type.isDynamicDim(*d))
      return std::nullopt;
    return type.getDimSize(*d);
  }
  if (!isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(def))
    return std::nullopt;
  std::optional<int64_t> a = foldIndex(def->getOperand(0), depth + 1);
  std::optional<int64_t> b = foldIndex(def->getOperand(1), depth + 1);
  if (!a || !b)
    return std::nullopt;
  int64_t r;
  bool overflow = isa<arith::AddIOp>(def)   ? llvm::AddOverflow(*a, *b, r)
                  : isa<arith::SubIOp>(def) ? llvm::SubOverflow(*a, *b, r)
                                            : llvm::MulOverflow(*a, *b, r);
  if (overflow)
    return std::nullopt;
  return r;
}

Expr *Interpreter::scalar(Value v) {
  FloatAttr f;
  if (matchPattern(v, m_Constant(&f)))
    return constant(f.getValueAsDouble());
  IntegerAttr i;
  if (v.getType().isInteger(1) && matchPattern(v, m_Constant(&i)))
    return constant(i.getValue().getBoolValue());
  if (std::optional<int64_t> c = foldIndex(v))
    return make({Expr::Index,
                 {},
                 {},
                 0,
                 getAffineConstantExpr(*c, ctx),
                 {},
                 0,
                 {}});
  return make({Expr::Scalar, v, {}, 0, {}, {}, 0, {}});
}

Expr *Interpreter::tensor(Value t, AffineMap fromP) {
  if (!isa<RankedTensorType>(t.getType()))
    return scalar(t);
  if (leaves.contains(t))
    return leaf(t, fromP);
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
    AffineMap srcMap =
        simplifyAffineMap(AffineMap::get(rank, 0, srcExprs, ctx));
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

bool mlir::flash::detail::isScoreModOperation(Operation *op) {
  // Integer arithmetic that is not affine in the indices (T5's bucketed
  // relative positions) is rebuilt as it is.
  return isa<math::TanhOp, math::AbsFOp, math::LogOp, math::SqrtOp,
             arith::MinimumFOp, arith::MinNumFOp, arith::SIToFPOp,
             arith::UIToFPOp, arith::FPToSIOp, math::AbsIOp, arith::MinSIOp,
             arith::MaxSIOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
             arith::ExtUIOp, arith::ExtSIOp, arith::IndexCastOp>(op);
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
  // A tensor from outside the body read at affine indices (a score_mod's
  // slope per head, once decomposed) is a leaf like an operand.
  if (auto extract = dyn_cast<tensor::ExtractOp>(op);
      extract && extract.getTensor().getParentBlock() != body.op.getBlock()) {
    SmallVector<AffineExpr> at;
    SmallVector<Expr *, 3> indices;
    for (Value index : extract.getIndices()) {
      Expr *e = bodyValue(index, body);
      if (!e)
        return nullptr;
      indices.push_back(e);
      if (e->kind == Expr::Index)
        at.push_back(e->index);
    }
    if (at.size() == indices.size())
      return leaf(extract.getTensor(), AffineMap::get(rank, 0, at, ctx));
    // A gather at computed indices (an embedding table of T5's buckets).
    return make({Expr::Op, extract.getTensor(), {}, 0, {}, "tensor.extract", 0,
                 indices});
  }
  SmallVector<Expr *, 3> args;
  for (Value operand : op->getOperands()) {
    Expr *a = bodyValue(operand, body);
    if (!a)
      return nullptr;
    args.push_back(a);
  }
  // Index arithmetic stays affine.
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::IndexCastOp,
          arith::ExtSIOp>(op) &&
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
          math::Exp2Op>(op) ||
      isScoreModOperation(op);
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
// Expression helpers
//===----------------------------------------------------------------------===//

bool mlir::flash::detail::equal(const Expr *a, const Expr *b) {
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

bool mlir::flash::detail::isOp(const Expr *e, StringRef name) {
  return e && e->kind == Expr::Op && e->name == name;
}

Expr *mlir::flash::detail::stripCasts(Expr *e) {
  while (isOp(e, "arith.extf") || isOp(e, "arith.truncf"))
    e = e->args[0];
  return e;
}

bool mlir::flash::detail::isNegInf(const Expr *e) {
  return e->kind == Expr::Const &&
         e->constant == -std::numeric_limits<double>::infinity();
}

bool mlir::flash::detail::isConst(const Expr *e, double c) {
  return e->kind == Expr::Const && e->constant == c;
}

/// Follows transposes (linalg.transpose, or a generic that yields its input
/// through permutation maps) and casts, so that the fused op reads the
/// original tensor instead of a copy of it.
TensorAccess mlir::flash::detail::lookThroughCopies(TensorAccess access) {
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
TensorAccess mlir::flash::detail::lookThroughScaling(TensorAccess access,
                                                     double &scale) {
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

/// Evaluates an affine expression of P's dims at a point.
static int64_t evaluate(AffineExpr e, ArrayRef<int64_t> point,
                        MLIRContext *ctx) {
  AffineMap m = AffineMap::get(point.size(), 0, e, ctx);
  return m.compose(point).front();
}

/// Reads cmpi(lhs, rhs) on indices as a constraint on j - i.
LogicalResult mlir::flash::detail::parseIndexCompare(
    Expr *cmp, bool keep, unsigned rank, unsigned queryDim, unsigned keyDim,
    MLIRContext *ctx, Diagonal &d, std::string &reason) {
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
