//===- PipelineKeyLoops.cpp - two-stage key-block loops ---------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// FlashAttention-3's intra-warpgroup pipelining on the tiled forward: P V of
// key block j - 1 moves into the iteration of block j, between S = Q Kᵀ and
// the softmax, so that the GPU can run the softmax while P V is in flight.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHPIPELINEKEYLOOPSPASS
#include "flash/Dialect/Flash/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {
/// A key-block loop split into its two stages.
struct KeyLoopStages {
  scf::ForOp loop;
  Operation *scores = nullptr, *output = nullptr;
  /// The accumulator's position among the iter_args and results.
  unsigned acc = 0;
  llvm::SetVector<Operation *> stage1;
  /// Values of stage 0 that stage 1 reads: carried one iteration by the
  /// pipelined loop.
  llvm::SetVector<Value> crossing;
  /// Index arithmetic of the induction variable that stage 1 reads (the
  /// block's offset and row count): computed again in stage 1 from the
  /// previous block's index rather than carried, so that stage 1's loads
  /// depend on the induction variable alone (and can be issued ahead).
  llvm::SetVector<Operation *> recomputed;
};
} // namespace

/// Calls `fn` on every value `op` and the ops nested in it read.
static void forEachOperand(Operation *op, function_ref<void(Value)> fn) {
  op->walk([&](Operation *inner) {
    for (Value v : inner->getOperands())
      fn(v);
  });
}

/// The ops of `body` that `roots` depend on (`roots` included).
static llvm::DenseSet<Operation *> sliceOf(ArrayRef<Operation *> roots,
                                           Block *body) {
  llvm::DenseSet<Operation *> slice;
  SmallVector<Operation *> work(roots);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!slice.insert(op).second)
      continue;
    forEachOperand(op, [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (def && def->getBlock() == body)
        work.push_back(def);
    });
  }
  return slice;
}

static std::optional<KeyLoopStages> analyze(scf::ForOp loop) {
  KeyLoopStages st;
  st.loop = loop;
  Block *body = loop.getBody();
  for (Operation &op : body->without_terminator()) {
    std::optional<Contraction> role = getContraction(&op);
    if (!role)
      continue;
    if (*role != Contraction::Scores && *role != Contraction::Output)
      return std::nullopt;
    Operation *&slot = *role == Contraction::Scores ? st.scores : st.output;
    if (slot)
      return std::nullopt;
    slot = &op;
  }
  if (!st.scores || !st.output || st.output->getNumResults() != 1)
    return std::nullopt;
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  std::optional<unsigned> acc;
  for (OpOperand &operand : yield->getOpOperands())
    if (operand.get() == st.output->getResult(0))
      acc = operand.getOperandNumber();
  if (!acc)
    return std::nullopt;
  st.acc = *acc;

  SmallVector<Operation *> stage0Roots = {st.scores};
  for (auto [i, v] : llvm::enumerate(yield.getOperands())) {
    if (i == st.acc)
      continue;
    if (Operation *def = v.getDefiningOp(); def && def->getBlock() == body)
      stage0Roots.push_back(def);
  }
  llvm::DenseSet<Operation *> stage0 = sliceOf(stage0Roots, body);
  llvm::DenseSet<Operation *> outputSlice = sliceOf({st.output}, body);
  for (Operation &op : body->without_terminator())
    if (outputSlice.contains(&op) && !stage0.contains(&op))
      st.stage1.insert(&op);
    else
      stage0.insert(&op);

  Value accArg = loop.getRegionIterArgs()[st.acc];
  // Elementwise ops of stage 1 that read only stage 0 (P rounded to V's
  // type) run in stage 0 instead: the loop then carries their results (P in
  // 16 bits, not its f32 original).
  for (Operation &op : body->without_terminator()) {
    auto generic = dyn_cast<linalg::GenericOp>(&op);
    if (!generic || !st.stage1.contains(&op) || getContraction(&op))
      continue;
    bool early = true;
    forEachOperand(&op, [&](Value v) {
      if (v == accArg)
        early = false;
      Operation *def = v.getDefiningOp();
      if (def && def->getBlock() == body && st.stage1.contains(def) &&
          !isa<tensor::EmptyOp>(def))
        early = false;
    });
    if (!early)
      continue;
    st.stage1.remove(&op);
    for (Value init : generic.getDpsInits())
      if (auto empty = init.getDefiningOp<tensor::EmptyOp>();
          empty && empty->hasOneUse())
        st.stage1.remove(empty);
  }
  bool valid = true;
  for (Operation &op : body->without_terminator()) {
    bool late = st.stage1.contains(&op);
    forEachOperand(&op, [&](Value v) {
      if (v == accArg) {
        valid &= late;
        return;
      }
      if (auto arg = dyn_cast<BlockArgument>(v); arg && arg.getOwner() == body) {
        // Stage 1 runs a block later: it may read the block's offsets (the
        // induction variable, carried) but no other running state.
        if (late && arg != loop.getInductionVar())
          valid = false;
        else if (late)
          st.crossing.insert(v);
        return;
      }
      Operation *def = v.getDefiningOp();
      if (!def || def->getBlock() != body)
        return;
      bool defLate = st.stage1.contains(def);
      if (!late && defLate)
        valid = false;
      if (late && !defLate)
        st.crossing.insert(v);
    });
  }
  // The accumulator's old value goes only to stage 1, and the loop's other
  // results come from stage 0.
  if (!valid)
    return std::nullopt;
  // Index values made from the induction variable by pure ops.
  llvm::DenseMap<Value, bool> known;
  std::function<bool(Value)> ofInductionVar = [&](Value v) -> bool {
    if (v == loop.getInductionVar())
      return true;
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != body)
      return true;
    if (auto it = known.find(v); it != known.end())
      return it->second;
    bool ok = isPure(def) && def->getNumRegions() == 0 &&
              llvm::all_of(def->getResultTypes(),
                           [](Type t) { return t.isIntOrIndex(); }) &&
              llvm::all_of(def->getOperands(), ofInductionVar);
    known[v] = ok;
    return ok;
  };
  SmallVector<Value> carried;
  for (Value x : st.crossing) {
    if (!ofInductionVar(x)) {
      carried.push_back(x);
      continue;
    }
    // The induction variable itself is mapped to the previous block's.
    if (x == loop.getInductionVar())
      continue;
    for (Operation *op : sliceOf({x.getDefiningOp()}, body))
      st.recomputed.insert(op);
  }
  st.crossing = llvm::SetVector<Value>(carried.begin(), carried.end());
  return st;
}

/// Makes the producer of a carried tensor write into the carried value
/// (`into`) when its payload does not read its init: one buffer per
/// carried tensor across iterations.
static void writeInto(Value produced, Value into) {
  auto generic = produced.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic->getNumResults() != 1 ||
      generic.getNumDpsInits() != 1)
    return;
  OpOperand *init = generic.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      generic.payloadUsesValueFromOperand(init) ||
      init->get().getType() != into.getType())
    return;
  init->set(into);
}

static void pipeline(KeyLoopStages &st) {
  scf::ForOp loop = st.loop;
  Block *body = loop.getBody();
  Location loc = loop.getLoc();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  unsigned n = loop.getNumRegionIterArgs();
  Value iv = loop.getInductionVar();
  ValueRange args = loop.getRegionIterArgs();
  auto isStage1 = [&](Operation *op) { return st.stage1.contains(op); };
  // The index arithmetic stage 1 reads, for the block at `previous`.
  auto recompute = [&](OpBuilder &at, IRMapping &map, Value previous) {
    map.map(iv, previous);
    for (Operation &op : body->without_terminator())
      if (st.recomputed.contains(&op))
        at.clone(op, map);
  };

  OpBuilder b(loop);
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound(),
        step = loop.getStep();
  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, lb, ub);
  auto guard = scf::IfOp::create(b, loc, loop.getResultTypes(), any,
                                 /*withElseRegion=*/true);
  {
    OpBuilder eb = guard.getElseBodyBuilder();
    scf::YieldOp::create(eb, loc, loop.getInitArgs());
  }
  OpBuilder tb = guard.getThenBodyBuilder();

  // Prologue: stage 0 of block lb.
  IRMapping pro;
  pro.map(iv, lb);
  for (unsigned i = 0; i < n; ++i)
    if (i != st.acc)
      pro.map(args[i], loop.getInitArgs()[i]);
  for (Operation &op : body->without_terminator())
    if (!isStage1(&op))
      tb.clone(op, pro);
  SmallVector<Value> inits;
  for (unsigned i = 0; i < n; ++i)
    inits.push_back(i == st.acc ? loop.getInitArgs()[i]
                                : pro.lookupOrDefault(yield.getOperand(i)));
  for (Value x : st.crossing)
    inits.push_back(pro.lookupOrDefault(x));

  Value first = arith::AddIOp::create(tb, loc, lb, step);
  auto pipelined = scf::ForOp::create(tb, loc, first, ub, step, inits);
  Block *newBody = pipelined.getBody();
  ValueRange newArgs = pipelined.getRegionIterArgs();
  {
    OpBuilder kb = OpBuilder::atBlockBegin(newBody);
    if (!newBody->empty())
      kb.setInsertionPoint(newBody->getTerminator());
    IRMapping now, late;
    now.map(iv, pipelined.getInductionVar());
    for (unsigned i = 0; i < n; ++i)
      (i == st.acc ? late : now).map(args[i], newArgs[i]);
    for (auto [k, x] : llvm::enumerate(st.crossing))
      late.map(x, newArgs[n + k]);
    // S = Q Kᵀ of this block (and what it needs), then stage 1 of the
    // previous block, then the rest of this block's stage 0.
    auto cloneNow = [&](Operation &op) {
      Operation *copy = kb.clone(op, now);
      for (auto [k, x] : llvm::enumerate(st.crossing))
        if (x.getDefiningOp() == &op)
          writeInto(copy->getResult(cast<OpResult>(x).getResultNumber()),
                    newArgs[n + k]);
    };
    Block::iterator it = body->begin();
    for (; &*it != st.scores; ++it)
      if (!isStage1(&*it))
        cloneNow(*it);
    cloneNow(*it++);
    recompute(kb, late,
              arith::SubIOp::create(kb, loc, pipelined.getInductionVar(), step));
    for (Operation &op : body->without_terminator())
      if (isStage1(&op))
        kb.clone(op, late);
    for (; &*it != yield.getOperation(); ++it)
      if (!isStage1(&*it))
        cloneNow(*it);
    SmallVector<Value> next;
    for (unsigned i = 0; i < n; ++i)
      next.push_back(i == st.acc ? late.lookup(st.output->getResult(0))
                                 : now.lookupOrDefault(yield.getOperand(i)));
    for (Value x : st.crossing)
      next.push_back(now.lookupOrDefault(x));
    if (!newBody->empty() && newBody->back().hasTrait<OpTrait::IsTerminator>())
      newBody->back().erase();
    OpBuilder end = OpBuilder::atBlockEnd(newBody);
    scf::YieldOp::create(end, loc, next);
  }

  // Epilogue: stage 1 of the last block.
  IRMapping epi;
  epi.map(args[st.acc], pipelined.getResult(st.acc));
  for (auto [k, x] : llvm::enumerate(st.crossing))
    epi.map(x, pipelined.getResult(n + k));
  tb.setInsertionPointAfter(pipelined);
  recompute(tb, epi, arith::SubIOp::create(tb, loc, ub, step));
  for (Operation &op : body->without_terminator())
    if (isStage1(&op))
      tb.clone(op, epi);
  SmallVector<Value> results;
  for (unsigned i = 0; i < n; ++i)
    results.push_back(i == st.acc ? epi.lookup(st.output->getResult(0))
                                  : pipelined.getResult(i));
  scf::YieldOp::create(tb, loc, results);

  loop.replaceAllUsesWith(guard.getResults());
  loop.erase();
}

namespace {
struct FlashPipelineKeyLoopsPass
    : flash::impl::FlashPipelineKeyLoopsPassBase<FlashPipelineKeyLoopsPass> {
  void runOnOperation() override {
    SmallVector<KeyLoopStages> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (std::optional<KeyLoopStages> st = analyze(loop))
        loops.push_back(std::move(*st));
    });
    for (KeyLoopStages &st : loops)
      pipeline(st);
  }
};
} // namespace
