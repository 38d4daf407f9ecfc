//===- FuseAttentionBackward.cpp - recompute instead of saving P -*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// Finds attention whose probabilities P are read by their own gradient
// (GradientMatcher) and replaces both with flash.attention (returning the
// LSE) and flash.attention_backward. Within one function both are rewritten
// in place; when P crosses a call boundary (a forward function returning it,
// a backward function taking it), the signatures and call sites carry the
// fused forward's O and LSE instead.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/Transforms/Passes.h"

#include "AttentionFusion.h"
#include "GradientMatcher.h"
#include "IndexSpaceInterpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHFUSEATTENTIONBACKWARDPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {
/// Maps a block argument of the backward function to the value of the
/// forward function it always receives (null when there is none).
using ArgumentOrigin = function_ref<Value(BlockArgument)>;

/// Whether `value` (in the backward function) always equals `forward` (in
/// the forward one): the same value, or an argument that receives it, or the
/// same reshape of such values.
bool sameAcrossCalls(Value value, Value forward, ArgumentOrigin origin,
                     int depth = 0) {
  if (value == forward)
    return true;
  if (!origin || depth > 4)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(value))
    return origin(arg) == forward;
  Operation *a = value.getDefiningOp(), *b = forward.getDefiningOp();
  if (!a || !b ||
      !isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, tensor::CastOp>(a) ||
      a->getName() != b->getName() || a->getAttrs() != b->getAttrs() ||
      a->getResultTypes() != b->getResultTypes() ||
      a->getNumOperands() != b->getNumOperands())
    return false;
  for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands()))
    if (!sameAcrossCalls(x, y, origin, depth + 1))
      return false;
  return true;
}

/// The factor f with `access` = f · `forward` (the same tensor read the same
/// way, up to copies and constant scaling), following block arguments of
/// the backward function into the forward one through `origin`.
std::optional<double> relate(TensorAccess access, const TensorAccess &forward,
                             ArgumentOrigin origin) {
  double f = 1.0;
  auto look = [&](TensorAccess a) {
    return lookThroughCopies(lookThroughScaling(lookThroughCopies(a), f));
  };
  access = look(access);
  if (auto arg = dyn_cast<BlockArgument>(access.tensor); arg && origin) {
    Value v = origin(arg);
    if (!v)
      return std::nullopt;
    access = look({v, access.map});
  }
  if (!sameAcrossCalls(access.tensor, forward.tensor, origin) ||
      access.map != forward.map)
    return std::nullopt;
  return f;
}

/// How the backward's operands relate to the forward's.
struct Factors {
  double query = 1, key = 1, value = 1;
};

/// Checks that the backward reads the forward's Q, K, V (as far as it reads
/// them) and returns their factors.
FailureOr<Factors> relateOperands(const AttentionMatch &m,
                                  const GradientMatch &g, ArgumentOrigin origin,
                                  std::string &reason) {
  Factors f;
  auto need = [&](const TensorAccess &access, const TensorAccess &forward,
                  StringRef what, double &factor) {
    std::optional<double> r = relate(access, forward, origin);
    if (!r)
      reason = what.str();
    else
      factor = *r;
    return r.has_value();
  };
  if (!need(g.value, m.value, "dP = dO Vᵀ does not read the forward's V",
            f.value) ||
      (g.gradQuery && !need(g.gradQuery.operand, m.key,
                            "dS K does not read the forward's K", f.key)) ||
      (g.gradKey && !need(g.gradKey.operand, m.query,
                          "dSᵀ Q does not read the forward's Q", f.query)))
    return failure();
  return f;
}

/// The first of the gradient contractions in their block.
Operation *firstGradient(const GradientMatch &g) {
  Operation *first = nullptr;
  for (const GradientContraction *c : {&g.gradValue, &g.gradQuery, &g.gradKey})
    if (*c && (!first || c->op->isBeforeInBlock(first)))
      first = c->op;
  return first;
}

bool sameBlock(const GradientMatch &g, Block *block) {
  for (Operation *op : g.chain)
    if (op->getBlock() != block)
      return false;
  return true;
}

/// The flash operands of the backward, as values at its insertion point.
struct BackwardOperands {
  Value query, key, value, output, lse, bias, mask;
};

/// Creates flash.attention_backward at the insertion point and replaces
/// the gradient contractions with its results.
LogicalResult buildBackward(RewriterBase &rewriter, const AttentionMatch &m,
                            const FusedAttention &fwd, const GradientMatch &g,
                            const Factors &f, const BackwardOperands &ops,
                            std::string &reason) {
  Operation *first = firstGradient(g);
  Location loc = first->getLoc();
  auto oType = cast<RankedTensorType>(ops.output.getType());
  FailureOr<Value> gradOut =
      relayout(rewriter, loc, {{g.gradOutput}}, fwd.queryDims,
               oType.getElementType(), reason);
  if (failed(gradOut))
    return failure();
  if (fwd.grouped)
    *gradOut = collapseGroups(rewriter, loc, *gradOut);
  if (gradOut->getType() != oType)
    *gradOut = tensor::CastOp::create(rewriter, loc, oType, *gradOut);
  AttentionOp fused = fwd.op;
  auto bwd = AttentionBackwardOp::create(
      rewriter, loc,
      TypeRange{ops.query.getType(), ops.key.getType(), ops.value.getType()},
      ops.query, ops.key, ops.value, ops.output, *gradOut, ops.lse, ops.bias,
      ops.mask, /*sinks=*/Value(), /*cu_seqlens_q=*/Value(),
      /*cu_seqlens_k=*/Value(), fused.getScaleAttr(), fused.getCausalAttr(),
      fused.getWindowAttr());
  // The graph's dS is c · vf · dx (dx the softmax input's gradient), its K
  // operand kf · K: dS K = c · vf · kf / scale · dQ.
  double scale = m.scale;
  auto replace = [&](const GradientContraction &c, Value flash,
                     ArrayRef<unsigned> dims, double factor) {
    if (!c)
      return;
    if (std::fabs(factor - 1.0) < 1e-6)
      factor = 1.0;
    Value r = toResultLayout(
        rewriter, loc, flash, dims, c.resultMap,
        cast<RankedTensorType>(c.op->getResult(0).getType()), factor);
    rewriter.replaceAllUsesWith(c.op->getResult(0), r);
  };
  FailureOr<Value> gradQuery =
      ungroup(rewriter, fwd, bwd.getGradQuery(), reason);
  if (failed(gradQuery))
    return failure();
  replace(g.gradQuery, *gradQuery, fwd.queryDims,
          g.gradQuery.factor * f.value * f.key / scale);
  replace(g.gradKey, bwd.getGradKey(), fwd.keyDims,
          g.gradKey.factor * f.value * f.query / scale);
  replace(g.gradValue, bwd.getGradValue(), fwd.keyDims, 1.0);
  return success();
}

std::string describe(const AttentionMatch &m, const GradientMatch &g,
                     StringRef where) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "fused attention backward " << where << ": gradients";
  if (g.gradQuery)
    os << " dQ";
  if (g.gradKey)
    os << " dK";
  if (g.gradValue)
    os << " dV";
  os << ", scale = " << m.scale << ", P no longer saved";
  return s;
}

/// Both directions in one function.
/// What the training-graph fusion cannot take from a matched forward.
static LogicalResult checkTrainingForward(const AttentionMatch &m,
                                          std::string &reason) {
  if (m.hasScoreMod()) {
    reason = "the scores are modified (score_mod: softcap, ALiBi, a computed "
             "bias), whose gradient the training-graph fusion does not "
             "match yet";
    return failure();
  }
  if (m.runtimeScale) {
    reason = "the scale is known only at run time (flash.attention_backward "
             "takes a constant scale)";
    return failure();
  }
  return success();
}

LogicalResult fuseJoint(RewriterBase &rewriter, const AttentionMatch &m,
                        const GradientMatch &g, bool report,
                        std::string &reason) {
  linalg::LinalgOp pv = m.output;
  Operation *probsDef = m.probs.getDefiningOp();
  Block *block = pv->getBlock();
  if (!probsDef || probsDef->getBlock() != block || !sameBlock(g, block)) {
    reason = "the forward and the backward are not in one block";
    return failure();
  }
  FailureOr<Factors> factors = relateOperands(m, g, nullptr, reason);
  if (failed(factors))
    return failure();

  OpBuilder::InsertionGuard guard(rewriter);
  // P's producer comes after everything the forward reads and before
  // everything the backward reads.
  rewriter.setInsertionPoint(probsDef);
  if (failed(checkTrainingForward(m, reason)))
    return failure();
  FailureOr<FusedAttention> fwd =
      buildFusedAttention(rewriter, m, /*withLse=*/true, reason);
  if (failed(fwd))
    return failure();
  AttentionOp fused = fwd->op;
  FailureOr<Value> output = ungroup(rewriter, *fwd, fused.getOutput(), reason);
  if (failed(output))
    return failure();
  Value out = toResultLayout(
      rewriter, pv.getLoc(), *output, fwd->queryDims, m.outputMap,
      cast<RankedTensorType>(pv->getResult(0).getType()));

  rewriter.setInsertionPoint(firstGradient(g));
  BackwardOperands ops{fused.getQuery(),  fused.getKey(), fused.getValue(),
                       fused.getOutput(), fused.getLse(), fused.getBias(),
                       fused.getMask()};
  if (failed(buildBackward(rewriter, m, *fwd, g, *factors, ops, reason)))
    return failure();
  if (report)
    fused.emitRemark(describe(m, g, "within the function"));

  SmallVector<Operation *> seeds(m.chain.begin(), m.chain.end());
  seeds.append(g.chain.begin(), g.chain.end());
  for (Value operand : pv->getOperands())
    if (Operation *def = operand.getDefiningOp())
      seeds.push_back(def);
  rewriter.replaceOp(pv, out);
  eraseDeadOps(rewriter, seeds);
  return success();
}

/// P returned by a forward function and passed to a backward function.
class SplitFusion {
public:
  SplitFusion(ModuleOp module, const AttentionMatch &m, func::ReturnOp ret)
      : module(module), m(m), ret(ret) {}

  LogicalResult match(std::string &reason);
  LogicalResult rewrite(RewriterBase &rewriter, bool report,
                        std::string &reason);

private:
  Value originOf(BlockArgument arg);

  ModuleOp module;
  const AttentionMatch &m;
  func::ReturnOp ret;
  func::FuncOp forward, backward;
  unsigned resultIndex = 0, argIndex = 0;
  /// Each backward call and the forward call whose P it receives.
  SmallVector<std::pair<func::CallOp, func::CallOp>> calls;
  std::optional<GradientMatch> g;
  Factors factors;

public:
  /// Set when a rewrite failed after it had changed a signature: the module
  /// is then inconsistent and the pass must fail.
  bool broken = false;
};

LogicalResult SplitFusion::match(std::string &reason) {
  forward = ret->getParentOfType<func::FuncOp>();
  auto fail = [&](const Twine &why) {
    reason = why.str();
    return failure();
  };
  if (!forward || forward.isExternal())
    return fail("P is returned from something that is not a function");
  unsigned count = 0;
  for (OpOperand &use : ret->getOpOperands())
    if (use.get() == m.probs) {
      resultIndex = use.getOperandNumber();
      ++count;
    }
  if (count != 1)
    return fail("P is returned more than once");
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(forward, module);
  if (!uses || uses->empty())
    return fail("P is returned from a function that is never called here, "
                "so its uses are unknown");
  for (const SymbolTable::SymbolUse &use : *uses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call)
      return fail("the forward function is referenced other than by calls");
    for (OpOperand &pUse : call->getResult(resultIndex).getUses()) {
      auto bwdCall = dyn_cast<func::CallOp>(pUse.getOwner());
      if (!bwdCall)
        return fail("P is used at a call site by " +
                    pUse.getOwner()->getName().getStringRef() +
                    ", not by a backward function");
      auto callee = module.lookupSymbol<func::FuncOp>(bwdCall.getCalleeAttr());
      if (!callee || callee.isExternal())
        return fail("P is passed to a function without a body");
      if (backward &&
          (callee != backward || pUse.getOperandNumber() != argIndex))
        return fail("P is passed to more than one function or argument");
      backward = callee;
      argIndex = pUse.getOperandNumber();
      calls.push_back({bwdCall, call});
    }
  }
  if (!backward)
    return fail("the returned P is never used");
  if (backward == forward)
    return fail("P is passed back to its own function");
  // Every call of the backward must receive a forward's P.
  std::optional<SymbolTable::UseRange> bwdUses =
      SymbolTable::getSymbolUses(backward, module);
  if (!bwdUses ||
      static_cast<size_t>(llvm::range_size(*bwdUses)) != calls.size())
    return fail("the backward function is also called without a "
                "forward's P");

  BlockArgument probs = backward.getArgument(argIndex);
  g = matchAttentionGradient(probs, m, reason);
  if (!g)
    return failure();
  if (!g->gradQuery || !g->gradKey)
    return fail("the backward function does not compute both dQ and dK, so "
                "it lacks the forward's Q or K");
  if (!sameBlock(*g, &backward.getBody().front()))
    return fail("the backward is not in the function's entry block");
  FailureOr<Factors> f = relateOperands(
      m, *g, [&](BlockArgument a) { return originOf(a); }, reason);
  if (failed(f))
    return failure();
  factors = *f;
  return success();
}

/// The forward function's value that every call of the backward passes as
/// `arg`: a result of the forward call whose P it receives, or an operand of
/// that call.
Value SplitFusion::originOf(BlockArgument arg) {
  if (arg.getOwner()->getParentOp() != backward)
    return {};
  Value origin;
  for (auto [bwdCall, fwdCall] : calls) {
    Value passed = bwdCall.getOperand(arg.getArgNumber());
    Value here;
    if (auto r = dyn_cast<OpResult>(passed); r && r.getOwner() == fwdCall)
      here = ret.getOperand(r.getResultNumber());
    for (OpOperand &o : fwdCall->getOpOperands())
      if (!here && o.get() == passed)
        here = forward.getArgument(o.getOperandNumber());
    if (!here || (origin && origin != here))
      return {};
    origin = here;
  }
  return origin;
}

LogicalResult SplitFusion::rewrite(RewriterBase &rewriter, bool report,
                                   std::string &reason) {
  linalg::LinalgOp pv = m.output;
  Operation *probsDef = m.probs.getDefiningOp();
  if (!probsDef || probsDef->getBlock() != pv->getBlock()) {
    reason = "the forward is not in one block";
    return failure();
  }
  OpBuilder::InsertionGuard guard(rewriter);

  // The backward's own view of Q, K, V, in the flash layout, unscaled;
  // checked before the forward changes.
  rewriter.setInsertionPoint(probsDef);
  if (failed(checkTrainingForward(m, reason)))
    return failure();
  FailureOr<FusedAttention> fwd =
      buildFusedAttention(rewriter, m, /*withLse=*/true, reason);
  if (failed(fwd))
    return failure();
  AttentionOp fused = fwd->op;

  // Backward side first: it reads the forward's relayout only for types.
  rewriter.setInsertionPoint(firstGradient(*g));
  Location loc = firstGradient(*g)->getLoc();
  auto own = [&](TensorAccess a, const TensorAccess &fwdAccess, double f,
                 ArrayRef<unsigned> dims, Type type) -> FailureOr<Value> {
    // a = f_bwd · a0 in the backward; a0 = f_fwd · the forward's operand.
    double inBackward = 1.0;
    TensorAccess a0 =
        lookThroughCopies(lookThroughScaling(lookThroughCopies(a), inBackward));
    double fromForward = f / inBackward;
    FailureOr<Value> r =
        relayout(rewriter, loc, {{a0, 1.0 / fromForward, false}}, dims,
                 cast<RankedTensorType>(type).getElementType(), reason);
    if (succeeded(r) && fwd->grouped && dims.size() == 5)
      *r = collapseGroups(rewriter, loc, *r);
    if (succeeded(r) && r->getType() != type)
      *r = tensor::CastOp::create(rewriter, loc, type, *r);
    return r;
  };
  FailureOr<Value> q = own(g->gradKey.operand, m.query, factors.query,
                           fwd->queryDims, fused.getQuery().getType());
  FailureOr<Value> k = own(g->gradQuery.operand, m.key, factors.key,
                           fwd->keyDims, fused.getKey().getType());
  FailureOr<Value> v = own(g->value, m.value, factors.value, fwd->keyDims,
                           fused.getValue().getType());
  if (failed(q) || failed(k) || failed(v))
    return failure();

  // Everything that can fail is checked before the signatures change.
  FailureOr<Value> output = ungroup(rewriter, *fwd, fused.getOutput(), reason);
  if (failed(output))
    return failure();
  if (!canRelayout(g->gradOutput, fwd->queryDims)) {
    reason = "dO is read through a reshape the fused op cannot express";
    return failure();
  }

  // What crosses the boundary instead of P.
  SmallVector<Value> carried = {fused.getOutput(), fused.getLse()};
  if (fused.getBias())
    carried.push_back(fused.getBias());
  if (fused.getMask())
    carried.push_back(fused.getMask());
  SmallVector<Type> carriedTypes = llvm::to_vector(
      llvm::map_range(carried, [](Value c) { return c.getType(); }));
  BlockArgument oldArg = backward.getArgument(argIndex);
  SmallVector<BlockArgument> newArgs;
  for (auto [i, t] : llvm::enumerate(carriedTypes)) {
    if (failed(
            backward.insertArgument(argIndex + 1 + i, t, {}, oldArg.getLoc())))
      return failure();
    newArgs.push_back(backward.getArgument(argIndex + 1 + i));
  }
  BackwardOperands ops{*q, *k, *v, newArgs[0], newArgs[1]};
  unsigned next = 2;
  if (fused.getBias())
    ops.bias = newArgs[next++];
  if (fused.getMask())
    ops.mask = newArgs[next++];
  if (failed(buildBackward(rewriter, m, *fwd, *g, factors, ops, reason))) {
    broken = true;
    return failure();
  }
  eraseDeadOps(rewriter,
               SmallVector<Operation *>(g->chain.begin(), g->chain.end()));
  if (!oldArg.use_empty()) {
    reason = "P is still used in the backward function";
    broken = true;
    return failure();
  }

  // Forward side: O replaces P V; the return carries O, LSE, bias, mask.
  rewriter.setInsertionPointAfter(fused);
  if (Operation *expand = output->getDefiningOp())
    rewriter.setInsertionPointAfter(expand);
  Value out = toResultLayout(
      rewriter, pv.getLoc(), *output, fwd->queryDims, m.outputMap,
      cast<RankedTensorType>(pv->getResult(0).getType()));
  SmallVector<Value> returned(ret.getOperands());
  returned.erase(returned.begin() + resultIndex);
  returned.insert(returned.begin() + resultIndex, carried.begin(),
                  carried.end());
  rewriter.modifyOpInPlace(ret, [&] { ret->setOperands(returned); });
  SmallVector<Operation *> seeds(m.chain.begin(), m.chain.end());
  for (Value operand : pv->getOperands())
    if (Operation *def = operand.getDefiningOp())
      seeds.push_back(def);
  rewriter.replaceOp(pv, out);
  eraseDeadOps(rewriter, seeds);
  if (report)
    fused.emitRemark(describe(
        m, *g,
        ("across @" + forward.getSymName() + " and @" + backward.getSymName())
            .str()));

  // Signatures and call sites.
  SmallVector<Type> results(forward.getResultTypes());
  results.erase(results.begin() + resultIndex);
  results.insert(results.begin() + resultIndex, carriedTypes.begin(),
                 carriedTypes.end());
  forward.setType(
      rewriter.getFunctionType(forward.getArgumentTypes(), results));
  if (failed(backward.eraseArgument(argIndex))) {
    broken = true;
    return failure();
  }
  DenseMap<Operation *, func::CallOp> rebuilt;
  for (auto [bwdCall, fwdCall] : calls) {
    func::CallOp newFwd = rebuilt.lookup(fwdCall);
    if (!newFwd) {
      rewriter.setInsertionPoint(fwdCall);
      newFwd = func::CallOp::create(rewriter, fwdCall.getLoc(), forward,
                                    fwdCall.getOperands());
      rebuilt[fwdCall] = newFwd;
    }
    SmallVector<Value> operands(bwdCall.getOperands());
    operands.erase(operands.begin() + argIndex);
    operands.insert(
        operands.begin() + argIndex,
        newFwd->getResults().slice(resultIndex, carried.size()).begin(),
        newFwd->getResults().slice(resultIndex, carried.size()).end());
    rewriter.modifyOpInPlace(bwdCall, [&] { bwdCall->setOperands(operands); });
  }
  for (auto [oldCall, newFwd] : rebuilt) {
    SmallVector<Value> replacement;
    for (unsigned i = 0; i < oldCall->getNumResults(); ++i) {
      if (i == resultIndex) {
        replacement.push_back(Value());
        continue;
      }
      unsigned j = i < resultIndex ? i : i + carried.size() - 1;
      replacement.push_back(newFwd->getResult(j));
    }
    for (auto [oldResult, now] : llvm::zip(oldCall->getResults(), replacement))
      if (now)
        rewriter.replaceAllUsesWith(oldResult, now);
    rewriter.eraseOp(oldCall);
  }
  return success();
}

struct FlashFuseAttentionBackwardPass
    : flash::impl::FlashFuseAttentionBackwardPassBase<
          FlashFuseAttentionBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    forEachAttentionCandidate(
        module, [&](RewriterBase &rewriter, linalg::LinalgOp op) {
          std::string reason;
          bool candidate = false;
          std::optional<AttentionMatch> m =
              matchAttention(op, reason, candidate, /*allowProbsUsers=*/true);
          if (!m) {
            if (report && candidate)
              op->emitRemark("not fused (forward): ") << reason;
            return;
          }
          SmallVector<Operation *> others;
          for (Operation *user : m->probs.getUsers())
            if (user != op.getOperation())
              others.push_back(user);
          if (others.empty())
            return; // forward only: --flash-fuse-attention's job
          bool ok;
          if (auto ret = dyn_cast<func::ReturnOp>(others.front());
              ret && others.size() == 1) {
            SplitFusion split(module, *m, ret);
            ok = succeeded(split.match(reason)) &&
                 succeeded(split.rewrite(rewriter, report, reason));
            if (split.broken) {
              op->emitError("flash-fuse-attention-backward: rewriting the "
                            "forward/backward pair failed half-way: ")
                  << reason;
              return signalPassFailure();
            }
          } else {
            std::optional<GradientMatch> g =
                matchAttentionGradient(m->probs, *m, reason);
            ok = g && succeeded(fuseJoint(rewriter, *m, *g, report, reason));
          }
          if (!ok && report)
            op->emitRemark("backward not fused: ") << reason;
        });
    if (failed(foldIntoFusedOps(module)))
      return signalPassFailure();
  }
};
} // namespace
