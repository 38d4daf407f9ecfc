//===- AttentionMatcher.cpp - find softmax(Q Kᵀ) V in linalg ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "AttentionMatcher.h"
#include "IndexSpaceInterpreter.h"
#include "flash/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

//===----------------------------------------------------------------------===//
// Recognition
//===----------------------------------------------------------------------===//

static bool isScoreLeaf(const Expr *e) {
  if (e->kind != Expr::Leaf || !e->map.isPermutation())
    return false;
  auto op = e->value.getDefiningOp<linalg::LinalgOp>();
  return op && isMulAddContraction(op);
}

/// Whether some node of `e` satisfies `pred`, each shared node visited once
/// (the trees are DAGs: y + tanh(y) repeated is exponential as a tree).
static bool anyNode(const Expr *e, function_ref<bool(const Expr *)> pred,
                    llvm::SmallPtrSetImpl<const Expr *> &seen) {
  if (!seen.insert(e).second)
    return false;
  if (pred(e))
    return true;
  return llvm::any_of(e->args,
                      [&](const Expr *a) { return anyNode(a, pred, seen); });
}
static bool anyNode(const Expr *e, function_ref<bool(const Expr *)> pred) {
  llvm::SmallPtrSet<const Expr *, 32> seen;
  return anyNode(e, pred, seen);
}

static bool dependsOnScores(const Expr *e) { return anyNode(e, isScoreLeaf); }

/// The dimension of the op's source that dimension `dim` of `v` has the
/// size of, through a transpose, a reshape that only adds or drops unit
/// dims around it, or a broadcasting copy (repeat_kv's steps).
static std::optional<std::pair<Value, unsigned>> sizeSource(Value v,
                                                            unsigned dim) {
  Operation *def = v.getDefiningOp();
  if (auto transpose = dyn_cast_or_null<linalg::TransposeOp>(def))
    return std::make_pair(transpose.getInput(),
                          (unsigned)transpose.getPermutation()[dim]);
  auto onlyNonUnit = [](ArrayRef<int64_t> group, ShapedType type,
                        int64_t want) -> std::optional<unsigned> {
    std::optional<unsigned> found;
    for (int64_t d : group) {
      if (type.getDimSize(d) == 1)
        continue;
      if (found)
        return std::nullopt;
      found = d;
    }
    return found && (want < 0 || *found == want) ? found : std::nullopt;
  };
  if (auto collapse = dyn_cast_or_null<tensor::CollapseShapeOp>(def)) {
    auto group = collapse.getReassociationIndices()[dim];
    if (auto d = onlyNonUnit(group, collapse.getSrcType(), -1))
      return std::make_pair(collapse.getSrc(), *d);
    return std::nullopt;
  }
  if (auto expand = dyn_cast_or_null<tensor::ExpandShapeOp>(def)) {
    for (auto [srcDim, group] :
         llvm::enumerate(expand.getReassociationIndices()))
      if (llvm::is_contained(group, (int64_t)dim))
        return onlyNonUnit(group, expand.getResultType(), dim)
                   ? std::optional(std::make_pair(expand.getSrc(),
                                                  (unsigned)srcDim))
                   : std::nullopt;
    return std::nullopt;
  }
  auto copy = dyn_cast_or_null<linalg::GenericOp>(def);
  if (!copy || copy.getNumDpsInputs() != 1 || copy.getNumDpsInits() != 1 ||
      !copy.getIndexingMapsArray().back().isIdentity())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(copy.getBody()->getTerminator());
  if (yield.getOperand(0) != copy.getBody()->getArgument(0))
    return std::nullopt;
  AffineMap in = copy.getIndexingMapsArray().front();
  if (std::optional<unsigned> pos =
          in.getResultPosition(getAffineDimExpr(dim, v.getContext())))
    return std::make_pair(copy.getDpsInputs()[0], *pos);
  return std::nullopt;
}

/// The symbol that the function's `flash.sizes` gives dimension `dim` of
/// `v` (a function argument, looked through sizeSource), if any.
static StringAttr symbolicSize(Value v, unsigned dim) {
  while (auto source = sizeSource(v, dim))
    std::tie(v, dim) = *source;
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.getOwner()->isEntryBlock())
    return {};
  auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  if (!fn)
    return {};
  auto sizes = fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(),
                                              FlashDialect::kSizesAttrName);
  if (!sizes || dim >= sizes.size())
    return {};
  return dyn_cast<StringAttr>(sizes[dim]);
}

/// Whether the frontend promised that the two dynamic sizes are equal.
static bool sameSymbolicSize(Value a, unsigned dimA, Value b, unsigned dimB) {
  StringAttr x = symbolicSize(a, dimA);
  return x && x == symbolicSize(b, dimB);
}

/// Softmax guarded against fully masked rows, as the decomposition and
/// careful frontends write it: `select(m == -inf, 0, m)` for the row max and
/// `select(s == 0, 0, e / s)` for the normalisation. Both are exact on rows
/// with a finite score and give flash.attention's O = 0 on the others, so
/// they read as `m` and `e / s`. Returns `x` when it is no such guard.
/// `e` without widening casts (exact, unlike truncf: a guard on a rounded
/// value is not a guard on the value).
static Expr *stripExtensions(Expr *e) {
  while (isOp(e, "arith.extf"))
    e = e->args[0];
  return e;
}

static Expr *unguarded(Expr *x, bool (*isGuardConst)(const Expr *)) {
  if (!isOp(x, "arith.select"))
    return x;
  Expr *cond = stripCasts(x->args[0]);
  if (!isOp(cond, "arith.cmpf"))
    return x;
  auto pred = static_cast<arith::CmpFPredicate>(cond->predicate);
  bool equalMeansGuard = pred == arith::CmpFPredicate::OEQ ||
                         pred == arith::CmpFPredicate::UEQ;
  if (!equalMeansGuard && pred != arith::CmpFPredicate::ONE &&
      pred != arith::CmpFPredicate::UNE)
    return x;
  Expr *guarded = stripExtensions(cond->args[0]);
  if (!isGuardConst(stripCasts(cond->args[1])))
    return x;
  Expr *guardValue = x->args[equalMeansGuard ? 1 : 2];
  Expr *value = stripExtensions(x->args[equalMeansGuard ? 2 : 1]);
  if (!isConst(stripCasts(guardValue), 0.0))
    return x;
  // The row max itself, or the quotient by the guarded sum.
  if (equal(value, guarded))
    return value;
  if (isOp(value, "arith.divf") &&
      equal(stripExtensions(value->args[1]), guarded))
    return value;
  return x;
}

static bool isZeroConst(const Expr *e) { return isConst(e, 0.0); }

namespace {
struct ScoreTerms {
  Expr *scores = nullptr;
  double scale = 1.0;
  Value runtimeScale;
  bool divideByRuntimeScale = false;
  SmallVector<std::pair<Expr *, double>> biases;
  SmallVector<std::pair<Expr *, bool>> masks;
  /// A function of the scores that is not scale * S + bias (softcap), and
  /// the factor it enters the softmax input with.
  Expr *modified = nullptr;
  double modFactor = 1.0;
};
} // namespace

std::optional<double> mlir::flash::detail::scaledScoreFactor(Expr *e) {
  e = stripCasts(e);
  if (isScoreLeaf(e))
    return 1.0;
  if (isOp(e, "arith.negf"))
    if (std::optional<double> c = scaledScoreFactor(e->args[0]))
      return -*c;
  if (isOp(e, "arith.mulf") || isOp(e, "arith.divf")) {
    Expr *a = stripCasts(e->args[0]), *b = stripCasts(e->args[1]);
    bool div = isOp(e, "arith.divf");
    if (b->kind == Expr::Const)
      if (std::optional<double> c = scaledScoreFactor(a))
        return div ? *c / b->constant : *c * b->constant;
    if (!div && a->kind == Expr::Const)
      if (std::optional<double> c = scaledScoreFactor(b))
        return *c * a->constant;
  }
  return std::nullopt;
}

/// Visits every node of `e` once (the trees share nodes), each before its
/// args.
static void walkExpr(Expr *e, function_ref<void(Expr *)> fn,
                     llvm::SmallPtrSetImpl<Expr *> &seen) {
  if (!seen.insert(e).second)
    return;
  fn(e);
  for (Expr *arg : e->args)
    walkExpr(arg, fn, seen);
}
static void walkExpr(Expr *e, function_ref<void(Expr *)> fn) {
  llvm::SmallPtrSet<Expr *, 32> seen;
  walkExpr(e, fn, seen);
}

/// Takes `x`, a function of the scores that parseScores has no structure
/// for, as a score modification g: the scale is the first factor found on
/// the scores inside it (g then reads scale * S).
static LogicalResult takeModified(Expr *x, double factor, ScoreTerms &t,
                                  std::string &reason) {
  auto fail = [&](const Twine &why) {
    if (reason.empty())
      reason = why.str();
    return failure();
  };
  if (!dependsOnScores(x))
    return fail("the softmax input does not depend on Q Kᵀ");
  if (t.runtimeScale)
    return fail("the scores are modified before a scale known only at run "
                "time is applied");
  Expr *leaf = nullptr;
  std::optional<double> scale;
  bool twoScores = false;
  walkExpr(x, [&](Expr *e) {
    if (!scale)
      scale = scaledScoreFactor(e);
    if (!isScoreLeaf(e))
      return;
    twoScores |= leaf && !equal(leaf, e);
    leaf = e;
  });
  if (twoScores)
    return fail("the softmax input reads two different score contractions");
  if (!scale || *scale == 0.0)
    return fail("the scores enter a score modification without a scale");
  t.scores = leaf;
  t.scale = *scale;
  t.modified = x;
  t.modFactor = factor;
  return success();
}

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
  // Parsing goes from the softmax inward: a bias or mask met after the
  // run-time factor is applied before it, and would be scaled by a value
  // (of unknown sign) that the fused op applies to Q Kᵀ only.
  if (t.runtimeScale && (x->name == "arith.select" ||
                         x->name == "arith.addf" || x->name == "arith.subf"))
    return fail("a bias or mask is applied before the run-time scale");
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
    return takeModified(x, factor, t, reason);
  }
  if (x->name == "arith.addf" || x->name == "arith.subf") {
    bool da = dependsOnScores(a), db = dependsOnScores(b);
    if (da == db)
      return da ? takeModified(x, factor, t, reason)
                : fail("the softmax input does not depend on Q Kᵀ");
    double sign = x->name == "arith.subf" ? -1.0 : 1.0;
    if (da) {
      t.biases.push_back({b, sign * factor});
      return parseScores(a, factor, t, reason);
    }
    if (sign < 0)
      return takeModified(x, factor, t, reason);
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
    if (cb->kind == Expr::Scalar || (!div && ca->kind == Expr::Scalar)) {
      Expr *scalar = cb->kind == Expr::Scalar ? cb : ca;
      if (t.runtimeScale)
        return fail("the scores are scaled by two values known only at run "
                    "time");
      if (!scalar->value.getType().isF32())
        return fail("the run-time scale is not an f32 scalar");
      t.runtimeScale = scalar->value;
      t.divideByRuntimeScale = div;
      return parseScores(scalar == cb ? a : b, factor, t, reason);
    }
    return takeModified(x, factor, t, reason);
  }
  if (x->name == "arith.negf")
    return parseScores(a, -factor, t, reason);
  return takeModified(x, factor, t, reason);
}

/// A score modification reads tensors only along the batch axes and at
/// most one of the query and key axes (no M x N tensor), never along the
/// head dimension.
static LogicalResult checkScoreModReads(const AttentionMatch &m,
                                        std::string &reason) {
  bool ok = true;
  auto check = [&](Expr *e) {
    if (e->kind != Expr::Leaf || isScoreLeaf(e) || !ok)
      return;
    if (e->map.isFunctionOfDim(m.rank) ||
        (e->map.isFunctionOfDim(m.queryDim) &&
         e->map.isFunctionOfDim(m.keyDim))) {
      reason = "a score modification reads a tensor over both the query and "
               "the key axis (give it as a bias tensor instead)";
      ok = false;
    }
  };
  if (m.modified)
    walkExpr(m.modified, check);
  for (auto [term, factor] : m.modTerms)
    walkExpr(term, check);
  return success(ok);
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

    auto exprs = std::make_shared<Interpreter>(ctx, rank, keyDim);
    Interpreter &interp = *exprs;
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
    Expr *probs = unguarded(stripCasts(p), isZeroConst);
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
      if (anyNode(probs, [](const Expr *x) {
            return isOp(x, "math.exp") || isOp(x, "math.exp2");
          })) {
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
        Expr *mx = unguarded(stripCasts(d->args[1]), isNegInf);
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
    m.runtimeScale = terms.runtimeScale;
    m.divideByRuntimeScale = terms.divideByRuntimeScale;

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
      // Computed from indices, per-head values and scalars: kept symbolic.
      m.modTerms.push_back({bias, f});
    }
    if (!ok)
      continue;
    m.modified = terms.modified;
    m.modFactor = terms.modFactor;
    m.modScoreFactor = terms.scale;
    m.exprs = exprs;
    if (m.hasScoreMod() && failed(checkScoreModReads(m, reason)))
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
      } else if (isOp(c, "arith.select") &&
                 (isConst(c->args[2], 0.0) || isConst(c->args[1], 1.0))) {
        // A mask built in the graph (torch.tril of ones):
        // select(c, x, false) = c and x, select(c, true, x) = c or x.
        bool conjunction = isConst(c->args[2], 0.0);
        if (conjunction != keep) {
          reason = "a mask condition mixes kept and hidden terms";
          ok = false;
        } else {
          masks.push_back({c->args[0], keep});
          Expr *other = conjunction ? c->args[1] : c->args[2];
          if (!isConst(other, conjunction ? 1.0 : 0.0))
            masks.push_back({other, keep});
        }
      } else if (isOp(c, "arith.select") &&
                 isConst(c->args[1], 0.0) && isConst(c->args[2], 1.0)) {
        masks.push_back({c->args[0], !keep}); // select(c, false, true) = not c
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
      // Sizes of the tensors the fused op reads (looked through transposes),
      // so through their own maps.
      auto qType = cast<ShapedType>(m.query.tensor.getType());
      auto kType = cast<ShapedType>(m.key.tensor.getType());
      std::optional<unsigned> qPos =
          m.query.map.getResultPosition(getAffineDimExpr(*queryDim, ctx));
      std::optional<unsigned> kPos =
          m.key.map.getResultPosition(getAffineDimExpr(keyDim, ctx));
      int64_t querySeq = qPos ? qType.getDimSize(*qPos) : ShapedType::kDynamic;
      int64_t keySeq = kPos ? kType.getDimSize(*kPos) : ShapedType::kDynamic;
      std::optional<int64_t> offset;
      if (!ShapedType::isDynamic(querySeq) && !ShapedType::isDynamic(keySeq))
        offset = keySeq - querySeq;
      else if (qPos && kPos && sameSymbolicSize(m.query.tensor, *qPos,
                                                m.key.tensor, *kPos))
        offset = 0;
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
      m.keptDiagonal = {diag.lower, diag.upper};
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

    // Every intermediate must serve only this attention, but for those
    // that do not depend on Q Kᵀ (a bias or mask that other attentions
    // read too): the fused op recomputes what it needs of them, and they
    // stay for their other users.
    m.chain = interp.visited;
    m.chain.insert(qk);
    m.probs = pOperand->get();
    // The chain's ops that read Q Kᵀ, transitively (the interpreter visits
    // consumers before producers, so this iterates to a fixpoint).
    llvm::SmallPtrSet<Operation *, 16> fromScores = {qk};
    for (bool grew = true; grew;) {
      grew = false;
      for (Operation *op : m.chain)
        if (!fromScores.contains(op) &&
            llvm::any_of(op->getOperands(), [&](Value v) {
              return fromScores.contains(v.getDefiningOp());
            }))
        {
          fromScores.insert(op);
          grew = true;
        }
    }
    for (Operation *op : m.chain) {
      // Fills are cheap and often shared between inits; they stay if used.
      if (isa<linalg::FillOp>(op) || !fromScores.contains(op))
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
