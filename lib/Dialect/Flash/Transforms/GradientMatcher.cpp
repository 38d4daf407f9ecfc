//===- GradientMatcher.cpp - find attention's backward in linalg -*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "GradientMatcher.h"
#include "IndexSpaceInterpreter.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <array>
#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {
/// A contraction's loops as extended dims, from one operand whose dims are
/// known extended dims; the one loop that operand does not read is the
/// head (or value) dim, `rank`.
std::optional<SmallVector<unsigned>>
loopsToExt(linalg::LinalgOp op, AffineMap operandMap,
           ArrayRef<unsigned> operandDimsToExt, unsigned rank) {
  SmallVector<unsigned> loops(op.getNumLoops(), rank);
  SmallVector<bool> seen(op.getNumLoops(), false);
  for (auto [i, r] : llvm::enumerate(operandMap.getResults())) {
    auto d = dyn_cast<AffineDimExpr>(r);
    if (!d)
      return std::nullopt;
    loops[d.getPosition()] = operandDimsToExt[i];
    seen[d.getPosition()] = true;
  }
  if (llvm::count(seen, false) != 1)
    return std::nullopt;
  return loops;
}

AffineMap toExt(AffineMap map, ArrayRef<unsigned> loops, unsigned rank) {
  SmallVector<AffineExpr> exprs;
  for (AffineExpr r : map.getResults())
    exprs.push_back(getAffineDimExpr(
        loops[cast<AffineDimExpr>(r).getPosition()], map.getContext()));
  return AffineMap::get(rank + 1, 0, exprs, map.getContext());
}

/// Whether `op` reads `v` through a map that leaves a loop out (a
/// contraction producing a new dimension, not a reduction of P's row).
bool readsWithFreeLoop(linalg::LinalgOp op, Value v) {
  for (OpOperand *in : op.getDpsInputOperands())
    if (in->get() == v &&
        op.getMatchingIndexingMap(in).getNumResults() < op.getNumLoops())
      return true;
  return false;
}

/// Evaluates a dS candidate at key position j of one row with P = p and
/// dP = g. Only P, dP, constants, sums over the row and arithmetic are
/// allowed.
struct RowEvaluator {
  Value probs, gradProbs;
  AffineMap gradProbsMap;
  ArrayRef<double> p, g;
  bool ok = true;
  /// Conditions of selects that zero the gradient, and whether `true`
  /// keeps it.
  SmallVector<std::pair<Expr *, bool>> &zeroed;

  double operator()(const Expr *e, size_t j) {
    if (!ok)
      return 0;
    switch (e->kind) {
    case Expr::Const:
      return e->constant;
    case Expr::Leaf:
      if (e->value == probs && e->map.isIdentity())
        return p[j];
      if (e->value == gradProbs && e->map == gradProbsMap)
        return g[j];
      break;
    case Expr::Reduce:
      if (e->name == "sum") {
        double s = 0;
        for (size_t k = 0; k < p.size(); ++k)
          s += (*this)(e->args[0], k);
        return s;
      }
      break;
    case Expr::Op: {
      auto arg = [&](unsigned i) { return (*this)(e->args[i], j); };
      if (e->name == "arith.extf" || e->name == "arith.truncf")
        return arg(0);
      if (e->name == "arith.negf")
        return -arg(0);
      if (e->name == "arith.addf")
        return arg(0) + arg(1);
      if (e->name == "arith.subf")
        return arg(0) - arg(1);
      if (e->name == "arith.mulf")
        return arg(0) * arg(1);
      if (e->name == "arith.divf")
        return arg(0) / arg(1);
      if (e->name == "arith.select") {
        // The backward of a mask: entries zeroed where the condition says.
        if (isConst(stripCasts(e->args[2]), 0.0)) {
          zeroed.push_back({e->args[0], true});
          return arg(1);
        }
        if (isConst(stripCasts(e->args[1]), 0.0)) {
          zeroed.push_back({e->args[0], false});
          return arg(2);
        }
      }
      break;
    }
    default:
      break;
    }
    ok = false;
    return 0;
  }
};

/// The leaf that is a contraction result (dP), if the tree has exactly one.
const Expr *findGradProbs(const Expr *e, Value probs, const Expr *&found,
                          bool &ambiguous) {
  if (e->kind == Expr::Leaf && e->value != probs) {
    if (found && !(found->value == e->value && found->map == e->map))
      ambiguous = true;
    found = e;
  }
  // A select's condition is a mask, not a value of the gradient.
  ArrayRef<Expr *> args = e->args;
  if (e->kind == Expr::Op && e->name == "arith.select")
    args = args.drop_front();
  for (const Expr *a : args)
    findGradProbs(a, probs, found, ambiguous);
  return found;
}

/// Whether a select keeping the gradient where `cond` is `keep` zeroes
/// only scores that the forward masks (where P = 0 anyway).
bool zeroesOnlyMasked(Expr *cond, bool keep, const AttentionMatch &m) {
  cond = stripCasts(cond);
  if (cond->kind == Expr::Leaf) {
    for (auto [access, k] : m.masks)
      if (access.tensor == cond->value && access.map == cond->map && k == keep)
        return true;
    return false;
  }
  if (isOp(cond, "arith.xori") && isConst(cond->args[1], 1.0))
    return zeroesOnlyMasked(cond->args[0], !keep, m);
  if (isOp(cond, "arith.andi") && keep)
    return zeroesOnlyMasked(cond->args[0], keep, m) &&
           zeroesOnlyMasked(cond->args[1], keep, m);
  if (!isOp(cond, "arith.cmpi"))
    return false;
  Diagonal d;
  std::string reason;
  if (failed(parseIndexCompare(cond, keep, m.rank, m.queryDim, m.keyDim,
                               m.output->getContext(), d, reason)))
    return false;
  // The select keeps lower <= j - i <= upper; the forward keeps a subset.
  auto [lower, upper] = m.keptDiagonal;
  return (!d.upper || (upper && *d.upper >= *upper)) &&
         (!d.lower || (lower && *d.lower <= *lower));
}

/// The c with `tree` == c · P (dP - rowsum(P dP)) for every P and dP, by
/// evaluation at random rows; nullopt when there is none.
std::optional<double>
softmaxGradientFactor(const Expr *tree, Value probs, const Expr *gradProbs,
                      SmallVector<std::pair<Expr *, bool>> &zeroed) {
  std::mt19937 gen(12345);
  std::uniform_real_distribution<double> unit(0.1, 1.0), sym(-1.0, 1.0);
  std::optional<double> c;
  for (int trial = 0; trial < 3; ++trial) {
    constexpr size_t kRow = 7;
    std::array<double, kRow> p, g, got, ref;
    for (size_t j = 0; j < p.size(); ++j) {
      p[j] = unit(gen);
      g[j] = sym(gen);
    }
    double dot = 0;
    for (size_t j = 0; j < p.size(); ++j)
      dot += p[j] * g[j];
    RowEvaluator eval{probs, gradProbs->value, gradProbs->map, p, g, true,
                      zeroed};
    double scaleOfRef = 0;
    for (size_t j = 0; j < kRow; ++j) {
      got[j] = eval(tree, j);
      ref[j] = p[j] * (g[j] - dot);
      scaleOfRef = std::max(scaleOfRef, std::fabs(ref[j]));
    }
    if (!eval.ok)
      return std::nullopt;
    if (!c) {
      size_t best = 0;
      for (size_t j = 1; j < ref.size(); ++j)
        if (std::fabs(ref[j]) > std::fabs(ref[best]))
          best = j;
      c = got[best] / ref[best];
      if (!std::isfinite(*c) || *c == 0.0)
        return std::nullopt;
    }
    for (size_t j = 0; j < ref.size(); ++j)
      if (!(std::fabs(got[j] - *c * ref[j]) <=
            1e-9 * std::fabs(*c) * scaleOfRef))
        return std::nullopt;
  }
  return c;
}
} // namespace

std::optional<GradientMatch> mlir::flash::detail::matchAttentionGradient(
    Value probs, const AttentionMatch &m, std::string &reason) {
  MLIRContext *ctx = probs.getContext();
  Operation *forward = m.output;
  unsigned rank = m.rank, queryDim = m.queryDim, keyDim = m.keyDim;
  auto fail = [&](const Twine &why) -> std::optional<GradientMatch> {
    reason = why.str();
    return std::nullopt;
  };

  // Everything computed from P, up to the contractions that turn it into
  // a gradient (they read a P-derived tensor with a loop it does not have).
  llvm::SetVector<Value> derived;
  llvm::SetVector<Operation *> inner;
  llvm::SetVector<Operation *> contractions;
  derived.insert(probs);
  SmallVector<Value> work = {probs};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (user == forward || inner.contains(user) ||
          contractions.contains(user))
        continue;
      auto linalgOp = dyn_cast<linalg::LinalgOp>(user);
      if (linalgOp && linalgOp.hasPureTensorSemantics() &&
          isMulAddContraction(linalgOp, /*severalReductions=*/true) &&
          readsWithFreeLoop(linalgOp, v)) {
        contractions.insert(user);
        continue;
      }
      bool view =
          isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(
              user);
      if (!view && !(linalgOp && linalgOp.hasPureTensorSemantics()))
        return fail("P is also used by " + user->getName().getStringRef() +
                    ", which is not part of its gradient");
      inner.insert(user);
      for (Value r : user->getResults())
        if (derived.insert(r))
          work.push_back(r);
    }
  }
  if (contractions.empty())
    return fail("P has no consumer that contracts it into a gradient");

  // dK and dV reduce the query axis and the batch dims K does not read (the
  // group of grouped-query attention: the heads that share a K/V head).
  SmallVector<unsigned> byKeyReduction = {queryDim};
  for (unsigned d : m.batchDims)
    if (!m.key.map.isFunctionOfDim(d))
      byKeyReduction.push_back(d);
  llvm::sort(byKeyReduction);

  GradientMatch g;
  const Expr *gradProbs = nullptr;
  std::deque<Interpreter> interpreters;
  llvm::SetVector<Operation *> visited;
  SmallVector<unsigned> identity =
      llvm::to_vector(llvm::seq<unsigned>(0, rank));
  for (Operation *op : contractions) {
    auto c = cast<linalg::LinalgOp>(op);
    OpOperand *in0 = c.getDpsInputOperand(0), *in1 = c.getDpsInputOperand(1);
    bool d0 = derived.contains(in0->get()), d1 = derived.contains(in1->get());
    if (d0 && d1)
      return fail("a contraction multiplies two tensors computed from P");
    OpOperand *t = d0 ? in0 : in1, *other = d0 ? in1 : in0;
    SmallVector<unsigned> reductionLoops;
    c.getReductionDims(reductionLoops);
    auto reducedDims = [&](ArrayRef<unsigned> loops) {
      SmallVector<unsigned> dims;
      for (unsigned l : reductionLoops)
        dims.push_back(loops[l]);
      llvm::sort(dims);
      return dims;
    };
    AffineMap tMap = c.getMatchingIndexingMap(t);

    // Find how the contraction's input lies over P's index space: P
    // itself must be read at the same point. P alone is dV's operand, the
    // softmax gradient dQ's or dK's.
    auto tType = cast<RankedTensorType>(t->get().getType());
    if (tType.getRank() != rank)
      return fail("the softmax gradient is reshaped before its contraction");
    SmallVector<unsigned> perm = identity;
    bool matched = false;
    std::string why;
    do {
      Interpreter &interp = interpreters.emplace_back(ctx, rank, keyDim);
      interp.leaves.insert(probs);
      SmallVector<AffineExpr> exprs;
      for (unsigned d : perm)
        exprs.push_back(getAffineDimExpr(d, ctx));
      Expr *tree = interp.tensor(t->get(), AffineMap::get(rank, 0, exprs, ctx));
      if (!tree) {
        why = interp.reason;
        continue;
      }
      std::optional<SmallVector<unsigned>> loops =
          loopsToExt(c, tMap, perm, rank);
      if (!loops) {
        why = "a contraction of P is not a plain matrix product";
        continue;
      }
      GradientContraction gc{
          c,
          toExt(c.getIndexingMapMatchingResult(c->getResult(0)), *loops, rank),
          {other->get(), toExt(c.getMatchingIndexingMap(other), *loops, rank)},
          1.0};
      const Expr *read = stripCasts(tree);
      if (read->kind == Expr::Leaf && read->value == probs) {
        if (!read->map.isIdentity()) {
          why = "P is read transposed";
          continue;
        }
        // dV = Pᵀ dO: P contracted over the query axis (and the group).
        if (reducedDims(*loops) != byKeyReduction)
          return fail("P is contracted over the key axis by a second "
                      "consumer");
        if (g.gradValue)
          return fail("P is contracted over the query axis twice");
        g.gradValue = gc;
        visited.insert(interp.visited.begin(), interp.visited.end());
        matched = true;
        continue;
      }
      const Expr *leaf = nullptr;
      bool ambiguous = false;
      findGradProbs(tree, probs, leaf, ambiguous);
      if (!leaf || ambiguous) {
        why = "the softmax gradient does not read exactly one dP";
        continue;
      }
      SmallVector<std::pair<Expr *, bool>> zeroed;
      std::optional<double> factor =
          softmaxGradientFactor(tree, probs, leaf, zeroed);
      if (!factor) {
        why = "a contraction's input is not the softmax gradient "
              "P (dP - rowsum(P dP))";
        continue;
      }
      if (!llvm::all_of(zeroed, [&](auto z) {
            return zeroesOnlyMasked(z.first, z.second, m);
          }))
        return fail("the gradient is zeroed where the forward does not "
                    "mask");
      gc.factor = *factor;
      if (gradProbs &&
          !(gradProbs->value == leaf->value && gradProbs->map == leaf->map))
        return fail("dQ and dK read different dP");
      gradProbs = leaf;
      SmallVector<unsigned> reduced = reducedDims(*loops);
      if (reduced == SmallVector<unsigned>{keyDim} && !g.gradQuery)
        g.gradQuery = gc;
      else if (reduced == byKeyReduction && !g.gradKey)
        g.gradKey = gc;
      else
        return fail("the softmax gradient is contracted other than as dS K "
                    "and dSᵀ Q");
      visited.insert(interp.visited.begin(), interp.visited.end());
      matched = true;
    } while (!matched && std::next_permutation(perm.begin(), perm.end()));
    if (!matched)
      return fail(why);
  }
  if (!g.gradQuery && !g.gradKey)
    return fail("no gradient of Q or K is computed from P");

  // dP = dO Vᵀ.
  auto dp = gradProbs->value.getDefiningOp<linalg::LinalgOp>();
  if (!dp || !isMulAddContraction(dp) || !gradProbs->map.isPermutation())
    return fail("dP is not a contraction dO Vᵀ");
  AffineMap dpOut =
      dp.getIndexingMapMatchingResult(cast<OpResult>(gradProbs->value));
  SmallVector<unsigned> dpDims;
  for (AffineExpr r : gradProbs->map.getResults())
    dpDims.push_back(cast<AffineDimExpr>(r).getPosition());
  std::optional<SmallVector<unsigned>> dpLoops =
      loopsToExt(dp, dpOut, dpDims, rank);
  if (!dpLoops || (*dpLoops)[firstReductionDim(dp)] != rank)
    return fail("dP is not a contraction over the value dimension");
  for (OpOperand *in : dp.getDpsInputOperands()) {
    TensorAccess a{in->get(),
                   toExt(dp.getMatchingIndexingMap(in), *dpLoops, rank)};
    bool byKey = a.map.isFunctionOfDim(keyDim),
         byQuery = a.map.isFunctionOfDim(queryDim);
    if (byKey && !byQuery)
      g.value = a;
    else if (byQuery && !byKey)
      g.gradOutput = a;
  }
  if (!g.value.tensor || !g.gradOutput.tensor)
    return fail("dP does not contract dO with V");
  if (g.gradValue) {
    TensorAccess a = lookThroughCopies(g.gradValue.operand);
    TensorAccess b = lookThroughCopies(g.gradOutput);
    if (a.tensor != b.tensor || a.map != b.map)
      return fail("dV and dP read different dO");
  }

  // Nothing computed from P may escape the gradients.
  for (Operation *op : inner) {
    if (!visited.contains(op))
      return fail("P feeds " + op->getName().getStringRef() +
                  ", which the gradients do not use");
    for (Operation *user : op->getUsers())
      if (!inner.contains(user) && !contractions.contains(user))
        return fail("an intermediate of the gradient (" +
                    op->getName().getStringRef() + ") has users outside it");
  }
  for (Operation *user : dp->getUsers())
    if (!inner.contains(user))
      return fail("dP has users outside the gradient");
  g.chain = inner;
  g.chain.insert(dp);
  g.chain.insert(contractions.begin(), contractions.end());
  return g;
}
