//===- FlashOps.cpp - flash dialect operations ------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <type_traits>

using namespace mlir;
using namespace mlir::flash;

#define GET_OP_CLASSES
#include "flash/Dialect/Flash/IR/FlashOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared verification
//===----------------------------------------------------------------------===//

namespace {
/// The logical sizes of an attention problem, taken from Q, K and V of rank
/// 2, 3 or 4 (missing leading dimensions are 1).
struct AttentionSizes {
  int64_t rank;
  int64_t batch, queryHeads, kvHeads, querySeq, keySeq, headDim, valueDim;
};
} // namespace

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

static bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Takes `have` as `size` while `size` is still unknown.
static void refine(int64_t &size, int64_t have) {
  if (ShapedType::isDynamic(size))
    size = have;
}

static bool isAttentionFloat(Type t) {
  return t.isF16() || t.isBF16() || t.isF32();
}

/// Size of logical dimension `fromEnd` (0 = last) of `type`, or 1 when the
/// type has fewer dimensions.
static int64_t dimFromEnd(RankedTensorType type, int64_t fromEnd) {
  int64_t idx = type.getRank() - 1 - fromEnd;
  return idx < 0 ? 1 : type.getDimSize(idx);
}

static LogicalResult verifyGroups(Operation *op, const AttentionSizes &s) {
  // Query heads are grouped by Hq / Hkv whether or not Hq is known.
  if (s.kvHeads == 0)
    return op->emitOpError("expects at least one key/value head, got 0");
  if (!ShapedType::isDynamic(s.queryHeads) &&
      !ShapedType::isDynamic(s.kvHeads) && s.queryHeads % s.kvHeads != 0)
    return op->emitOpError("expects the number of query heads (")
           << s.queryHeads
           << ") to be a multiple of the number of key/value heads ("
           << s.kvHeads << ")";
  return success();
}

/// With `pages` (a block table [B, P]), K and V are pages [num_pages, Hkv,
/// page_size, D]: their leading dimension is no batch and N is P x
/// page_size.
static FailureOr<AttentionSizes> verifyQKV(Operation *op, RankedTensorType q,
                                           RankedTensorType k,
                                           RankedTensorType v,
                                           RankedTensorType pages = {}) {
  int64_t rank = q.getRank();
  if (rank < 2 || rank > 4 || k.getRank() != rank || v.getRank() != rank)
    return op->emitOpError("expects query, key and value of equal rank 2, 3 "
                           "or 4, got ranks ")
           << q.getRank() << ", " << k.getRank() << " and " << v.getRank();
  Type et = q.getElementType();
  if (!isAttentionFloat(et) || k.getElementType() != et ||
      v.getElementType() != et)
    return op->emitOpError("expects query, key and value of one element type "
                           "among f16, bf16 and f32, got ")
           << q.getElementType() << ", " << k.getElementType() << " and "
           << v.getElementType();

  AttentionSizes s;
  s.rank = rank;
  s.headDim = dimFromEnd(q, 0);
  s.valueDim = dimFromEnd(v, 0);
  s.querySeq = dimFromEnd(q, 1);
  s.keySeq = dimFromEnd(k, 1);
  s.queryHeads = dimFromEnd(q, 2);
  s.kvHeads = dimFromEnd(k, 2);
  s.batch = dimFromEnd(q, 3);

  if (ShapedType::isDynamic(s.headDim) ||
      ShapedType::isDynamic(dimFromEnd(k, 0)))
    return op->emitOpError(
        "expects a static head dimension D in query and key");
  if (ShapedType::isDynamic(s.valueDim))
    return op->emitOpError("expects a static head dimension Dv in value");
  if (s.headDim != dimFromEnd(k, 0))
    return op->emitOpError("expects query and key to share the head dimension "
                           "D, got ")
           << s.headDim << " and " << dimFromEnd(k, 0);
  for (int64_t i = 1; i < rank; ++i) {
    if (!compatible(dimFromEnd(k, i), dimFromEnd(v, i)))
      return op->emitOpError("expects key and value to agree in every "
                             "dimension but the last, got ")
             << k << " and " << v;
  }
  // A size known from any operand binds all of them: Q batch 2, K batch ?
  // and V batch 3 are inconsistent although each pair is compatible.
  refine(s.kvHeads, dimFromEnd(v, 2));
  refine(s.keySeq, dimFromEnd(v, 1));
  if (pages) {
    int64_t pageSize = s.keySeq, perSequence = pages.getDimSize(1);
    s.keySeq =
        ShapedType::isDynamic(pageSize) || ShapedType::isDynamic(perSequence)
            ? ShapedType::kDynamic
            : pageSize * perSequence;
    if (!compatible(s.batch, pages.getDimSize(0)))
      return op->emitOpError("expects a block_table row per batch entry, got ")
             << pages << " for query " << q;
    refine(s.batch, pages.getDimSize(0));
  } else {
    for (RankedTensorType kv : {k, v})
      if (!compatible(s.batch, dimFromEnd(kv, 3)))
        return op->emitOpError("expects query, key and value of the same "
                               "batch size, got ")
               << q << ", " << k << " and " << v;
    refine(s.batch, dimFromEnd(k, 3));
    refine(s.batch, dimFromEnd(v, 3));
  }
  if (failed(verifyGroups(op, s)))
    return failure();
  return s;
}

static LogicalResult verifyScale(Operation *op, std::optional<float> scale) {
  if (scale && !std::isfinite(*scale))
    return op->emitOpError("expects a finite scale, got ") << *scale;
  return success();
}

/// Checks that `operand` broadcasts (right-aligned, static 1 broadcasts) to
/// the score shape [B, Hq, M, N].
static LogicalResult verifyScoreOperand(Operation *op, Value operand,
                                        StringRef name,
                                        const AttentionSizes &s) {
  if (!operand)
    return success();
  auto type = cast<RankedTensorType>(operand.getType());
  Type et = type.getElementType();
  if (name == "mask" && !et.isInteger(1))
    return op->emitOpError("expects an i1 mask, got element type ") << et;
  if (name == "bias" && !isAttentionFloat(et))
    return op->emitOpError("expects a bias of element type f16, bf16 or f32, "
                           "got ")
           << et;
  SmallVector<int64_t> scores = {s.batch, s.queryHeads, s.querySeq, s.keySeq};
  ArrayRef<int64_t> target = ArrayRef<int64_t>(scores).take_back(s.rank);
  if (type.getRank() < 1 || type.getRank() > s.rank)
    return op->emitOpError("expects a ")
           << name << " of rank 1 to " << s.rank << ", got " << type;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    int64_t have = dimFromEnd(type, i);
    int64_t want = target[target.size() - 1 - i];
    if (have != 1 && !compatible(have, want))
      return op->emitOpError("expects a ")
             << name << " broadcastable to the scores " << shapeString(target)
             << ", got " << type;
  }
  return success();
}

/// Checks that `sinks` is a float tensor [Hq].
static LogicalResult verifySinks(Operation *op, Value sinks,
                                 const AttentionSizes &s) {
  if (!sinks)
    return success();
  auto type = cast<RankedTensorType>(sinks.getType());
  if (type.getRank() != 1 || !isAttentionFloat(type.getElementType()) ||
      !compatible(type.getDimSize(0), s.queryHeads))
    return op->emitOpError("expects sinks of shape ")
           << shapeString({s.queryHeads})
           << " (one per query head) and element type f16, bf16 or f32, got "
           << type;
  return success();
}

static SmallVector<int64_t> outputShape(const AttentionSizes &s) {
  SmallVector<int64_t> shape = {s.batch, s.queryHeads, s.querySeq, s.valueDim};
  return SmallVector<int64_t>(ArrayRef<int64_t>(shape).take_back(s.rank));
}

static SmallVector<int64_t> lseShape(const AttentionSizes &s) {
  SmallVector<int64_t> shape = {s.batch, s.queryHeads, s.querySeq};
  return SmallVector<int64_t>(ArrayRef<int64_t>(shape).take_back(s.rank - 1));
}

static LogicalResult verifyShapedLike(Operation *op, Type type,
                                      ArrayRef<int64_t> shape, Type elementType,
                                      StringRef name) {
  auto tensor = cast<RankedTensorType>(type);
  bool ok = tensor.getElementType() == elementType &&
            tensor.getRank() == static_cast<int64_t>(shape.size());
  for (int64_t i = 0; ok && i < tensor.getRank(); ++i)
    ok = compatible(tensor.getDimSize(i), shape[i]);
  if (!ok)
    return op->emitOpError("expects ")
           << name << " of shape " << shapeString(shape) << " and element type "
           << elementType << ", got " << type;
  return success();
}

static bool isIndexInteger(Type t) {
  return t.isSignlessInteger(32) || t.isSignlessInteger(64);
}

/// Packed variable-length sequences: cu_seqlens_q and cu_seqlens_k together,
/// i32/i64 [S + 1] each, a batch of one, no bias, mask or block table.
/// Returns S (dynamic if unknown) through `sequences`.
template <typename OpTy>
static LogicalResult verifyVarlen(OpTy op, const AttentionSizes &s,
                                  int64_t &sequences) {
  Value cuQ = op.getCuSeqlensQ(), cuK = op.getCuSeqlensK();
  sequences = ShapedType::kDynamic;
  if (!cuQ && !cuK)
    return success();
  if (!cuQ || !cuK)
    return op->emitOpError("takes cu_seqlens_q and cu_seqlens_k together");
  int64_t offsets = ShapedType::kDynamic;
  for (auto [value, name] :
       {std::pair(cuQ, "cu_seqlens_q"), std::pair(cuK, "cu_seqlens_k")}) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getRank() != 1 || !isIndexInteger(type.getElementType()) ||
        type.getDimSize(0) == 0)
      return op->emitOpError("expects ")
             << name
             << " of shape [S + 1] (cumulative offsets of S sequences) and "
                "element type i32 or i64, got "
             << type;
    if (!compatible(offsets, type.getDimSize(0)))
      return op->emitOpError("expects cu_seqlens_q and cu_seqlens_k of one "
                             "size (S + 1 offsets), got ")
             << cuQ.getType() << " and " << cuK.getType();
    refine(offsets, type.getDimSize(0));
  }
  if (!ShapedType::isDynamic(offsets))
    sequences = offsets - 1;
  if (s.batch != 1)
    return op->emitOpError("expects a batch of size 1 with cu_seqlens (the "
                           "sequences are packed along the tokens), got ")
           << shapeString({s.batch});
  if (op.getBias() || op.getMask())
    return op->emitOpError("takes no bias or mask with cu_seqlens (a "
                           "score_mod sees each sequence's own positions)");
  if constexpr (std::is_same_v<OpTy, AttentionOp>)
    if (op.getBlockTable())
      return op->emitOpError("does not take a block_table with cu_seqlens yet");
  return success();
}

/// 1/sqrt(D) unless the op has a `scale` attribute; 1 for D = 0, whose
/// scores are all 0 (1/sqrt(0) = inf would make them NaN).
template <typename OpTy> static float effectiveScale(OpTy op) {
  if (std::optional<APFloat> scale = op.getScale())
    return scale->convertToFloat();
  int64_t d = op.getQuery().getType().getShape().back();
  if (d == 0)
    return 1.0f;
  return 1.0f / std::sqrt(static_cast<float>(d));
}

/// The checks both ops share: Q/K/V, scale, bias, mask and the output O
/// (the result of the forward, an operand of the backward). Returns the
/// problem sizes for the op-specific rest.
template <typename OpTy>
static FailureOr<AttentionSizes> verifyAttention(OpTy op, Type outputType) {
  RankedTensorType pages;
  if constexpr (std::is_same_v<OpTy, AttentionOp>) {
    if (Value table = op.getBlockTable()) {
      pages = cast<RankedTensorType>(table.getType());
      if (pages.getRank() != 2 || !pages.getElementType().isSignlessInteger(32))
        return op->emitOpError("expects a block_table of rank 2 [B, P] and "
                               "element type i32, got ")
               << pages;
      if (!op.getKeyLengths())
        return op->emitOpError("takes a block_table only with key_lengths "
                               "(the keys of each sequence)");
      if (op.getQuery().getType().getRank() != 4)
        return op->emitOpError("takes a block_table only in the rank-4 form");
    }
  }
  FailureOr<AttentionSizes> s =
      verifyQKV(op, op.getQuery().getType(), op.getKey().getType(),
                op.getValue().getType(), pages);
  if (failed(s))
    return failure();
  // The output O (and dO) carries B, Hq and M too; what it knows binds the
  // score operands and the LSE.
  auto out = cast<RankedTensorType>(outputType);
  if (out.getRank() == s->rank) {
    if (s->rank == 4)
      refine(s->batch, out.getDimSize(0));
    if (s->rank >= 3)
      refine(s->queryHeads, dimFromEnd(out, 2));
    refine(s->querySeq, dimFromEnd(out, 1));
  }
  if (failed(verifyGroups(op, *s)))
    return failure();
  std::optional<float> scale;
  if (std::optional<APFloat> attr = op.getScale())
    scale = attr->convertToFloat();
  if (failed(verifyScale(op, scale)) ||
      failed(verifyScoreOperand(op, op.getBias(), "bias", *s)) ||
      failed(verifyScoreOperand(op, op.getMask(), "mask", *s)) ||
      failed(verifySinks(op, op.getSinks(), *s)) ||
      failed(verifyShapedLike(op, outputType, outputShape(*s),
                              op.getQuery().getType().getElementType(),
                              "an output")))
    return failure();
  return s;
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

float AttentionOp::getEffectiveScale() {
  assert(!getRuntimeScale() && "the scale is known only at run time");
  return effectiveScale(*this);
}

Value AttentionOp::buildScale(OpBuilder &b) {
  if (Value scale = getRuntimeScale())
    return scale;
  return arith::ConstantOp::create(b, getLoc(),
                                   b.getF32FloatAttr(getEffectiveScale()));
}

Value mlir::flash::buildScoreMod(OpBuilder &b, Region &scoreMod, Value score,
                                 ValueRange indices) {
  if (scoreMod.empty())
    return score;
  assert(indices.size() == 4 && "score_mod takes (b, h, i, j)");
  Block &body = scoreMod.front();
  IRMapping map;
  map.map(body.getArgument(0), score);
  for (auto [arg, index] : llvm::zip(body.getArguments().drop_front(), indices))
    map.map(arg, index);
  for (Operation &op : body.without_terminator())
    b.clone(op, map);
  return map.lookupOrDefault(body.getTerminator()->getOperand(0));
}

static void nameScoreModArguments(Region &region,
                                  OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  static constexpr StringLiteral names[] = {"s", "b", "h", "i", "j"};
  for (auto [arg, name] : llvm::zip(region.getArguments(), names))
    setNameFn(arg, name);
}

void AttentionOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getOutput(), "output");
  if (Value lse = getLse())
    setNameFn(lse, "lse");
}

void AttentionOp::getAsmBlockArgumentNames(Region &region,
                                           OpAsmSetValueNameFn setNameFn) {
  nameScoreModArguments(region, setNameFn);
}

void AttentionBackwardOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getGradQuery(), "grad_query");
  setNameFn(getGradKey(), "grad_key");
  setNameFn(getGradValue(), "grad_value");
  if (Value gradSinks = getGradSinks())
    setNameFn(gradSinks, "grad_sinks");
}

void AttentionBackwardOp::getAsmBlockArgumentNames(
    Region &region, OpAsmSetValueNameFn setNameFn) {
  nameScoreModArguments(region, setNameFn);
}

void AttentionOp::takeScoreModFrom(RewriterBase &rewriter, AttentionOp from) {
  rewriter.inlineRegionBefore(from.getScoreMod(), getScoreMod(),
                              getScoreMod().end());
}

void AttentionBackwardOp::takeScoreModFrom(RewriterBase &rewriter,
                                           AttentionBackwardOp from) {
  rewriter.inlineRegionBefore(from.getScoreMod(), getScoreMod(),
                              getScoreMod().end());
}

/// The region is `^bb0(%s: f32, %b, %h, %i, %j: index)` ending in
/// flash.yield, and computes without side effects.
static LogicalResult verifyScoreMod(Operation *op, Region &scoreMod) {
  if (scoreMod.empty())
    return success();
  Block &body = scoreMod.front();
  Builder b(op->getContext());
  SmallVector<Type> want = {b.getF32Type(), b.getIndexType(),
                            b.getIndexType(), b.getIndexType(),
                            b.getIndexType()};
  if (body.getArgumentTypes() != TypeRange(want))
    return op->emitOpError("expects a score_mod region with arguments (f32, "
                           "index, index, index, index) for the score and its "
                           "(b, h, i, j), got ")
           << body.getNumArguments() << " argument(s)";
  if (body.empty() || !isa<YieldOp>(body.back()))
    return op->emitOpError(
        "expects the score_mod region to end in flash.yield");
  for (Operation &inner : body.without_terminator())
    if (!isMemoryEffectFree(&inner))
      return inner.emitOpError("has side effects, which a score_mod region of "
                               "flash.attention does not allow");
  return success();
}

//===----------------------------------------------------------------------===//
// The score_mod's derivative (forward mode)
//===----------------------------------------------------------------------===//

namespace {
/// Forward-mode differentiation of a score_mod body in its score argument:
/// each value that depends on the score gets a tangent; the rest (indices,
/// tensors and scalars from above, integer arithmetic) are constants.
class ScoreModDerivative {
public:
  explicit ScoreModDerivative(Block &body) : body(body) {}

  /// The first operation that depends on the score and has no rule.
  Operation *firstUndifferentiable() {
    DenseSet<Value> live = {body.getArgument(0)};
    for (Operation &op : body.without_terminator()) {
      if (llvm::none_of(op.getOperands(),
                        [&](Value v) { return live.contains(v); }))
        continue;
      if (!hasRule(&op))
        return &op;
      for (Value r : op.getResults())
        live.insert(r);
    }
    return nullptr;
  }

  /// Clones the body at `b` with `score` and `indices`, and returns the
  /// tangent of the yielded value (0 when it does not depend on the score).
  Value build(OpBuilder &b, Value score, ValueRange indices) {
    Location loc = body.getParentOp()->getLoc();
    IRMapping map;
    map.map(body.getArgument(0), score);
    for (auto [arg, index] :
         llvm::zip(body.getArguments().drop_front(), indices))
      map.map(arg, index);
    DenseMap<Value, Value> tangent; // original value -> new tangent
    tangent[body.getArgument(0)] = constant(b, loc, 1.0);
    for (Operation &op : body.without_terminator()) {
      Operation *clone = b.clone(op, map);
      if (llvm::none_of(op.getOperands(),
                        [&](Value v) { return tangent.count(v); }))
        continue;
      auto dx = [&](unsigned i) -> Value {
        auto it = tangent.find(op.getOperand(i));
        return it == tangent.end() ? constant(b, loc, 0.0) : it->second;
      };
      auto x = [&](unsigned i) { return clone->getOperand(i); };
      tangent[op.getResult(0)] = rule(b, loc, &op, clone, x, dx);
    }
    Value yielded = body.getTerminator()->getOperand(0);
    auto it = tangent.find(yielded);
    return it == tangent.end() ? constant(b, loc, 0.0) : it->second;
  }

private:
  static bool hasRule(Operation *op) {
    return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
               arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
               arith::MaxNumFOp, arith::MinNumFOp, arith::SelectOp,
               arith::ExtFOp, arith::TruncFOp, math::TanhOp, math::ExpOp,
               math::Exp2Op, math::LogOp, math::SqrtOp, math::AbsFOp>(op) &&
           op->getNumResults() == 1 && op->getResult(0).getType().isF32();
  }

  static Value constant(OpBuilder &b, Location loc, double c) {
    return arith::ConstantOp::create(b, loc,
                                     b.getF32FloatAttr(static_cast<float>(c)));
  }

  static Value rule(OpBuilder &b, Location loc, Operation *op,
                    Operation *clone, function_ref<Value(unsigned)> x,
                    function_ref<Value(unsigned)> dx) {
    auto mul = [&](Value l, Value r) {
      return arith::MulFOp::create(b, loc, l, r).getResult();
    };
    auto add = [&](Value l, Value r) {
      return arith::AddFOp::create(b, loc, l, r).getResult();
    };
    auto sub = [&](Value l, Value r) {
      return arith::SubFOp::create(b, loc, l, r).getResult();
    };
    Value y = clone->getResult(0);
    return llvm::TypeSwitch<Operation *, Value>(op)
        .Case<arith::AddFOp>([&](auto) { return add(dx(0), dx(1)); })
        .Case<arith::SubFOp>([&](auto) { return sub(dx(0), dx(1)); })
        .Case<arith::MulFOp>(
            [&](auto) { return add(mul(dx(0), x(1)), mul(x(0), dx(1))); })
        .Case<arith::DivFOp>([&](auto) {
          // (dx0 - y dx1) / x1
          return arith::DivFOp::create(b, loc, sub(dx(0), mul(y, dx(1))), x(1))
              .getResult();
        })
        .Case<arith::NegFOp>([&](auto) {
          return arith::NegFOp::create(b, loc, dx(0)).getResult();
        })
        .Case<arith::MaximumFOp, arith::MaxNumFOp>([&](auto) {
          Value first = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE,
                                              x(0), x(1));
          return arith::SelectOp::create(b, loc, first, dx(0), dx(1))
              .getResult();
        })
        .Case<arith::MinimumFOp, arith::MinNumFOp>([&](auto) {
          Value first = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE,
                                              x(0), x(1));
          return arith::SelectOp::create(b, loc, first, dx(0), dx(1))
              .getResult();
        })
        .Case<arith::SelectOp>([&](auto) {
          return arith::SelectOp::create(b, loc, x(0), dx(1), dx(2))
              .getResult();
        })
        .Case<arith::ExtFOp, arith::TruncFOp>([&](auto) { return dx(0); })
        .Case<math::TanhOp>([&](auto) {
          return mul(sub(constant(b, loc, 1.0), mul(y, y)), dx(0));
        })
        .Case<math::ExpOp>([&](auto) { return mul(y, dx(0)); })
        .Case<math::Exp2Op>([&](auto) {
          return mul(mul(y, constant(b, loc, 0.6931471805599453)), dx(0));
        })
        .Case<math::LogOp>([&](auto) {
          return arith::DivFOp::create(b, loc, dx(0), x(0)).getResult();
        })
        .Case<math::SqrtOp>([&](auto) {
          return arith::DivFOp::create(b, loc, dx(0),
                                       mul(constant(b, loc, 2.0), y))
              .getResult();
        })
        .Case<math::AbsFOp>([&](auto) {
          Value sign =
              math::CopySignOp::create(b, loc, constant(b, loc, 1.0), x(0));
          return mul(sign, dx(0));
        });
  }

  Block &body;
};
} // namespace

Value AttentionBackwardOp::buildScoreModDerivative(OpBuilder &b, Value score,
                                                   ValueRange indices) {
  if (!hasScoreMod())
    return arith::ConstantOp::create(b, getLoc(), b.getF32FloatAttr(1.0f));
  return ScoreModDerivative(getScoreMod().front()).build(b, score, indices);
}

LogicalResult AttentionOp::verify() {
  if (getRuntimeScale() && getScale())
    return emitOpError("takes a scale attribute or a runtime_scale operand, "
                       "not both");
  if (failed(verifyScoreMod(*this, getScoreMod())))
    return failure();
  FailureOr<AttentionSizes> s = verifyAttention(*this, getOutput().getType());
  if (failed(s))
    return failure();
  int64_t sequences;
  if (failed(verifyVarlen(*this, *s, sequences)))
    return failure();
  if (Value lengths = getKeyLengths()) {
    if (s->rank != 4 && !isVarlen())
      return emitOpError("takes key_lengths only in the rank-4 form (one "
                         "length per batch entry) or with cu_seqlens");
    auto type = cast<RankedTensorType>(lengths.getType());
    int64_t want = isVarlen() ? sequences : s->batch;
    if (type.getRank() != 1 || !isIndexInteger(type.getElementType()) ||
        !compatible(type.getDimSize(0), want))
      return emitOpError("expects key_lengths of shape ")
             << shapeString({want})
             << (isVarlen() ? " (one per sequence)" : " (one per batch entry)")
             << " and element type i32 or i64, got " << type;
  }
  if (getLse())
    return verifyShapedLike(*this, getLse().getType(), lseShape(*s),
                            Float32Type::get(getContext()), "an lse");
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionBackwardOp
//===----------------------------------------------------------------------===//

float AttentionBackwardOp::getEffectiveScale() { return effectiveScale(*this); }

LogicalResult AttentionBackwardOp::verify() {
  if (failed(verifyScoreMod(*this, getScoreMod())))
    return failure();
  if (hasScoreMod())
    if (Operation *op = ScoreModDerivative(getScoreMod().front())
                            .firstUndifferentiable())
      return op->emitOpError("is applied to the score in the score_mod of "
                             "flash.attention_backward, which has no "
                             "derivative rule for it");
  FailureOr<AttentionSizes> s = verifyAttention(*this, getOutput().getType());
  if (failed(s))
    return failure();
  int64_t sequences;
  if (failed(verifyVarlen(*this, *s, sequences)))
    return failure();
  if (static_cast<bool>(getSinks()) != static_cast<bool>(getGradSinks()))
    return emitOpError("returns grad_sinks exactly when it takes sinks");
  if (getSinks() && getSinks().getType() != getGradSinks().getType())
    return emitOpError("expects grad_sinks of the type of sinks, ")
           << getSinks().getType() << ", got " << getGradSinks().getType();
  return verifyShapedLike(*this, getLse().getType(), lseShape(*s),
                          Float32Type::get(getContext()), "an lse");
}

//===----------------------------------------------------------------------===//
// Rank normalisation
//===----------------------------------------------------------------------===//

/// Prepends `count` unit dimensions to `value`.
static Value prependUnitDims(OpBuilder &b, Location loc, Value value,
                             int64_t count) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape(count, 1);
  llvm::append_range(shape, type.getShape());
  SmallVector<ReassociationIndices> reassoc;
  ReassociationIndices first;
  for (int64_t i = 0; i <= count; ++i)
    first.push_back(i);
  reassoc.push_back(first);
  for (int64_t i = 1; i < type.getRank(); ++i)
    reassoc.push_back({count + i});
  SmallVector<OpFoldResult> sizes(count, b.getIndexAttr(1));
  llvm::append_range(sizes, tensor::getMixedSizes(b, loc, value));
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), value,
      reassoc, sizes);
}

/// Drops `count` leading unit dimensions of `value`, giving `type`.
static Value dropUnitDims(OpBuilder &b, Location loc, Value value,
                          RankedTensorType type, int64_t count) {
  SmallVector<ReassociationIndices> reassoc;
  ReassociationIndices first;
  for (int64_t i = 0; i <= count; ++i)
    first.push_back(i);
  reassoc.push_back(first);
  for (int64_t i = 1; i < type.getRank(); ++i)
    reassoc.push_back({count + i});
  return tensor::CollapseShapeOp::create(b, loc, type, value, reassoc);
}

static Type withUnitDims(Type type, int64_t count) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(count, 1);
  llvm::append_range(shape, tensor.getShape());
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// Replaces `op` by the results of `newOp` with `count` unit dims dropped
/// (from those that gained them: grad_sinks keeps its type).
static void replaceWithCollapsed(RewriterBase &rewriter, Operation *op,
                                 Operation *newOp, int64_t count) {
  SmallVector<Value> replacements;
  for (auto [oldR, newR] : llvm::zip(op->getResults(), newOp->getResults()))
    replacements.push_back(
        oldR.getType() == newR.getType()
            ? newR
            : dropUnitDims(rewriter, op->getLoc(), newR,
                           cast<RankedTensorType>(oldR.getType()), count));
  rewriter.replaceOp(op, replacements);
}

FailureOr<AttentionOp> mlir::flash::normalizeToRank4(RewriterBase &rewriter,
                                                     AttentionOp op) {
  int64_t count = 4 - op.getQuery().getType().getRank();
  if (count == 0)
    return op;
  if (count < 0)
    return failure();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto expand = [&](Value v) {
    return prependUnitDims(rewriter, loc, v, count);
  };
  SmallVector<Type> resultTypes;
  for (Value r : op->getResults())
    resultTypes.push_back(withUnitDims(r.getType(), count));
  Value q = expand(op.getQuery());
  Value k = expand(op.getKey());
  Value v = expand(op.getValue());
  // Bias and mask broadcast right-aligned and sinks are [Hq], so they stay
  // as they are.
  // Below rank 4, key_lengths comes only with cu_seqlens (one per sequence,
  // unchanged) and there is no block_table (the verifier says so).
  auto newOp = AttentionOp::create(
      rewriter, loc, resultTypes, q, k, v, op.getBias(), op.getMask(),
      op.getSinks(), op.getKeyLengths(), /*block_table=*/Value(),
      op.getCuSeqlensQ(), op.getCuSeqlensK(), op.getRuntimeScale(),
      op.getScaleAttr(), op.getCausalAttr(), op.getWindowAttr());
  newOp.takeScoreModFrom(rewriter, op);
  replaceWithCollapsed(rewriter, op, newOp, count);
  return newOp;
}

FailureOr<AttentionBackwardOp>
mlir::flash::normalizeToRank4(RewriterBase &rewriter, AttentionBackwardOp op) {
  int64_t count = 4 - op.getQuery().getType().getRank();
  if (count == 0)
    return op;
  if (count < 0)
    return failure();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto expand = [&](Value v) {
    return prependUnitDims(rewriter, loc, v, count);
  };
  Value q = expand(op.getQuery());
  Value k = expand(op.getKey());
  Value v = expand(op.getValue());
  Value o = expand(op.getOutput());
  Value gradO = expand(op.getGradOutput());
  Value lse = expand(op.getLse());
  SmallVector<Type> resultTypes = {q.getType(), k.getType(), v.getType()};
  if (Value gradSinks = op.getGradSinks())
    resultTypes.push_back(gradSinks.getType());
  auto newOp = AttentionBackwardOp::create(
      rewriter, loc, resultTypes, q, k, v, o, gradO, lse, op.getBias(),
      op.getMask(), op.getSinks(), op.getCuSeqlensQ(), op.getCuSeqlensK(),
      op.getScaleAttr(), op.getCausalAttr(), op.getWindowAttr());
  newOp.takeScoreModFrom(rewriter, op);
  replaceWithCollapsed(rewriter, op, newOp, count);
  return newOp;
}

namespace {
template <typename OpTy>
struct NormalizeAttentionRank : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (op.getQuery().getType().getRank() == 4)
      return rewriter.notifyMatchFailure(op, "already rank 4");
    return normalizeToRank4(rewriter, op);
  }
};
} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<NormalizeAttentionRank<AttentionOp>>(context);
}

void AttentionBackwardOp::getCanonicalizationPatterns(
    RewritePatternSet &results, MLIRContext *context) {
  results.add<NormalizeAttentionRank<AttentionBackwardOp>>(context);
}

//===----------------------------------------------------------------------===//
// AtomicAddOp
//===----------------------------------------------------------------------===//

LogicalResult AtomicAddOp::verify() {
  auto tile = cast<ShapedType>(getTile().getType());
  auto dest = cast<MemRefType>(getDest().getType());
  if (!isa<FloatType>(dest.getElementType()) ||
      tile.getElementType() != dest.getElementType())
    return emitOpError("adds a tile of floats into a buffer of the same "
                       "element type; got ")
           << tile.getElementType() << " into " << dest.getElementType();
  if (tile.getRank() != dest.getRank())
    return emitOpError("tile and destination have different ranks (")
           << tile.getRank() << " and " << dest.getRank() << ")";
  for (int64_t d = 0; d < tile.getRank(); ++d)
    if (!tile.isDynamicDim(d) && !dest.isDynamicDim(d) &&
        tile.getDimSize(d) != dest.getDimSize(d))
      return emitOpError("tile and destination differ in dimension ")
             << d << " (" << tile.getDimSize(d) << " and " << dest.getDimSize(d)
             << ")";
  if (std::optional<int64_t> group = getFragmentMajor()) {
    if (*group != 1 && *group != 2 && *group != 4)
      return emitOpError("fragment_major is 1, 2 or 4, got ") << *group;
    if (tile.getRank() != 2 || tile.isDynamicDim(1) ||
        tile.getDimSize(1) % 64 != 0)
      return emitOpError("fragment_major needs [rows, W] tiles with W a "
                         "static multiple of 64");
  }
  return success();
}

AffineMap AtomicAddOp::getDestinationMap() {
  MLIRContext *ctx = getContext();
  int64_t rank = cast<ShapedType>(getTile().getType()).getRank();
  std::optional<int64_t> group = getFragmentMajor();
  if (!group)
    return AffineMap::getMultiDimIdentityMap(rank, ctx);
  return getFragmentMajorMap(
      ctx, cast<ShapedType>(getTile().getType()).getDimSize(1), *group);
}

AffineMap mlir::flash::getFragmentMajorMap(MLIRContext *ctx, int64_t cols,
                                           int64_t group) {
  AffineExpr r = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx);
  AffineExpr lane = 4 * (r % 8) + (c % 8).floorDiv(2);
  AffineExpr half = (r % 16).floorDiv(8);
  // Groups of 4: a lane's pairs of two adjacent 8-column blocks, so the
  // blocks are 16 x 16.
  AffineExpr o =
      group == 4 ? 256 * c.floorDiv(16) + 128 * half + 4 * lane +
                       2 * (c % 16).floorDiv(8) + c % 2
                 : 128 * c.floorDiv(8) + 64 * half +
                       (group == 1 ? 32 * (c % 2) + lane : 2 * lane + c % 2);
  return AffineMap::get(
      2, 0, {16 * r.floorDiv(16) + o.floorDiv(cols), o % cols}, ctx);
}

void AtomicAddOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (isa<MemRefType>(getTile().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &getTileMutable(),
                         SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Read::get(), &getDestMutable(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &getDestMutable(),
                       SideEffects::DefaultResource::get());
}
