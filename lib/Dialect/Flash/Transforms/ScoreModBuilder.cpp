//===- ScoreModBuilder.cpp - a match's score modification as a region ----===//
//
// Part of the flash-mlir project.
//
// Rebuilds the expression trees of a matched score modification (softcap,
// ALiBi, biases from index arithmetic) as the fused op's score_mod region:
// P's dims become the region's (b, h, i, j), tensors read along them become
// tensor.extract, and the scores become the region's scaled-score argument.
//
//===----------------------------------------------------------------------===//

#include "AttentionFusion.h"
#include "IndexSpaceInterpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::detail;

namespace {
class ScoreModEmitter {
public:
  ScoreModEmitter(OpBuilder &b, Location loc, const AttentionMatch &m,
                  ArrayRef<AffineExpr> fromP, Block &body, std::string &reason)
      : b(b), loc(loc), m(m), fromP(fromP), body(body), reason(reason) {}

  /// The value of `e` in its natural type (f32 for float arithmetic), with
  /// constants typed as `hint` says.
  FailureOr<Value> emit(Expr *e, Type hint);
  FailureOr<Value> emitF32(Expr *e);

private:
  FailureOr<Value> fail(const Twine &why) {
    if (reason.empty())
      reason = why.str();
    return failure();
  }
  Value index(AffineExpr e);
  /// An expression of P's dims as one of the region's (b, h, i, j).
  AffineExpr inRegion(AffineExpr e) {
    return simplifyAffineExpr(e.replaceDims(fromP), 4, 0);
  }
  FailureOr<Value> toF32(Value v);
  Value toI64(Value v);
  FailureOr<Value> emitOp(Expr *e, Type hint);
  Value score() { return body.getArgument(0); }

  OpBuilder &b;
  Location loc;
  const AttentionMatch &m;
  ArrayRef<AffineExpr> fromP;
  Block &body;
  std::string &reason;
  DenseMap<Expr *, Value> cache;
};
} // namespace

/// `e` (an affine expression of the region's (b, h, i, j)) as index
/// arithmetic; the indices are non-negative, so floordiv and mod are the
/// signed ones.
Value ScoreModEmitter::index(AffineExpr e) {
  if (auto d = dyn_cast<AffineDimExpr>(e))
    return body.getArgument(1 + d.getPosition());
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return arith::ConstantIndexOp::create(b, loc, c.getValue());
  auto bin = cast<AffineBinaryOpExpr>(e);
  Value lhs = index(bin.getLHS()), rhs = index(bin.getRHS());
  switch (e.getKind()) {
  case AffineExprKind::Add:
    return arith::AddIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mul:
    return arith::MulIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::FloorDiv:
    return arith::FloorDivSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::CeilDiv:
    return arith::CeilDivSIOp::create(b, loc, lhs, rhs);
  case AffineExprKind::Mod: {
    Value q = arith::FloorDivSIOp::create(b, loc, lhs, rhs);
    return arith::SubIOp::create(b, loc, lhs,
                                 arith::MulIOp::create(b, loc, q, rhs));
  }
  default:
    llvm_unreachable("not a binary affine expression");
  }
}

FailureOr<Value> ScoreModEmitter::toF32(Value v) {
  Type f32 = b.getF32Type();
  auto ft = dyn_cast<FloatType>(v.getType());
  if (!ft)
    return fail("a score modification mixes integer and float values");
  if (ft.getWidth() < 32)
    return arith::ExtFOp::create(b, loc, f32, v).getResult();
  if (ft.getWidth() > 32)
    return arith::TruncFOp::create(b, loc, f32, v).getResult();
  return v;
}

Value ScoreModEmitter::toI64(Value v) {
  if (v.getType().isIndex())
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  if (v.getType().isInteger(1))
    return arith::ExtUIOp::create(b, loc, b.getI64Type(), v);
  if (v.getType().getIntOrFloatBitWidth() < 64)
    return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
  return v;
}

FailureOr<Value> ScoreModEmitter::emitF32(Expr *e) {
  FailureOr<Value> v = emit(e, b.getF32Type());
  if (failed(v))
    return failure();
  return toF32(*v);
}

FailureOr<Value> ScoreModEmitter::emit(Expr *e, Type hint) {
  // The scores, scaled: a multiple of the region's scaled score.
  if (std::optional<double> c = scaledScoreFactor(e)) {
    if (*c == m.modScoreFactor)
      return score();
    Value ratio = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(static_cast<float>(*c / m.modScoreFactor)));
    return arith::MulFOp::create(b, loc, score(), ratio).getResult();
  }
  if (e->kind == Expr::Const) {
    if (hint.isInteger(1))
      return arith::ConstantOp::create(b, loc, b.getBoolAttr(e->constant != 0))
          .getResult();
    if (isa<IndexType, IntegerType>(hint))
      return arith::ConstantOp::create(
                 b, loc, b.getIntegerAttr(hint, static_cast<int64_t>(e->constant)))
          .getResult();
    return arith::ConstantOp::create(
               b, loc, b.getF32FloatAttr(static_cast<float>(e->constant)))
        .getResult();
  }
  if (auto it = cache.find(e); it != cache.end())
    return it->second;
  FailureOr<Value> v = failure();
  switch (e->kind) {
  case Expr::Scalar:
    v = e->value;
    break;
  case Expr::Index:
    v = index(inRegion(e->index));
    break;
  case Expr::Leaf: {
    SmallVector<Value> at;
    for (AffineExpr r : e->map.getResults())
      at.push_back(index(inRegion(r)));
    v = tensor::ExtractOp::create(b, loc, e->value, at).getResult();
    break;
  }
  case Expr::Op:
    v = emitOp(e, hint);
    break;
  default:
    return fail("a score modification holds a reduction or a softmax");
  }
  if (succeeded(v))
    cache[e] = *v;
  return v;
}

FailureOr<Value> ScoreModEmitter::emitOp(Expr *e, Type hint) {
  StringRef name = e->name;
  Type f32 = b.getF32Type(), i1 = b.getI1Type();
  auto create = [&](ValueRange operands, Type type) -> Value {
    OperationState state(loc, name);
    state.addOperands(operands);
    state.addTypes(type);
    return b.create(state)->getResult(0);
  };
  if (name == "arith.extf" || name == "arith.truncf")
    return emitF32(e->args[0]);
  bool floatOp = llvm::StringSwitch<bool>(name)
                     .Cases({"arith.addf", "arith.subf", "arith.mulf",
                             "arith.divf", "arith.maximumf", "arith.maxnumf",
                             "arith.minimumf", "arith.minnumf", "arith.negf"},
                            true)
                     .Cases({"math.tanh", "math.absf", "math.exp", "math.exp2",
                             "math.log", "math.sqrt"},
                            true)
                     .Default(false);
  if (floatOp) {
    SmallVector<Value> operands;
    for (Expr *arg : e->args) {
      FailureOr<Value> v = emitF32(arg);
      if (failed(v))
        return failure();
      operands.push_back(*v);
    }
    return create(operands, f32);
  }
  if (name == "arith.cmpf") {
    FailureOr<Value> lhs = emitF32(e->args[0]), rhs = emitF32(e->args[1]);
    if (failed(lhs) || failed(rhs))
      return failure();
    return arith::CmpFOp::create(
               b, loc, static_cast<arith::CmpFPredicate>(e->predicate), *lhs,
               *rhs)
        .getResult();
  }
  if (name == "arith.cmpi") {
    // A constant takes the other side's type (an i1 `true`, an i64 bound).
    bool constFirst = e->args[0]->kind == Expr::Const;
    Expr *known = e->args[constFirst ? 1 : 0];
    Expr *other = e->args[constFirst ? 0 : 1];
    FailureOr<Value> first = emit(known, b.getIndexType());
    if (failed(first))
      return failure();
    FailureOr<Value> second = emit(other, first->getType());
    if (failed(second))
      return failure();
    FailureOr<Value> lhs = constFirst ? second : first;
    FailureOr<Value> rhs = constFirst ? first : second;
    if (lhs->getType() != rhs->getType()) {
      *lhs = toI64(*lhs);
      *rhs = toI64(*rhs);
    }
    return arith::CmpIOp::create(
               b, loc, static_cast<arith::CmpIPredicate>(e->predicate), *lhs,
               *rhs)
        .getResult();
  }
  if (name == "arith.select") {
    FailureOr<Value> cond = emit(e->args[0], i1);
    FailureOr<Value> yes = emit(e->args[1], hint);
    FailureOr<Value> no = emit(e->args[2], hint);
    if (failed(cond) || failed(yes) || failed(no))
      return failure();
    if (yes->getType() != no->getType()) {
      if (yes->getType().isIntOrIndex() && no->getType().isIntOrIndex()) {
        yes = toI64(*yes);
        no = toI64(*no);
      } else {
        yes = toF32(*yes);
        no = toF32(*no);
        if (failed(yes) || failed(no))
          return failure();
      }
    }
    return arith::SelectOp::create(b, loc, *cond, *yes, *no).getResult();
  }
  if (name == "arith.andi" || name == "arith.ori" || name == "arith.xori") {
    FailureOr<Value> lhs = emit(e->args[0], i1), rhs = emit(e->args[1], i1);
    if (failed(lhs) || failed(rhs))
      return failure();
    if (!lhs->getType().isInteger(1) || !rhs->getType().isInteger(1))
      return fail("a score modification has integer logic on non-booleans");
    return create({*lhs, *rhs}, i1);
  }
  if (name == "arith.sitofp" || name == "arith.uitofp") {
    FailureOr<Value> v = emit(e->args[0], b.getI64Type());
    if (failed(v))
      return failure();
    if (!v->getType().isIntOrIndex())
      return fail("a score modification converts a float to a float as if "
                  "it were an integer");
    // Index arithmetic becomes i64 (as frontends' index_cast spells it); an
    // integer read from a tensor keeps its width, and so its sign.
    Value i = v->getType().isIndex() ? toI64(*v) : *v;
    if (name == "arith.sitofp")
      return arith::SIToFPOp::create(b, loc, f32, i).getResult();
    return arith::UIToFPOp::create(b, loc, f32, i).getResult();
  }
  if (name == "tensor.extract") {
    SmallVector<Value> at;
    for (Expr *arg : e->args) {
      FailureOr<Value> v = emit(arg, b.getIndexType());
      if (failed(v))
        return failure();
      if (!v->getType().isIntOrIndex())
        return fail("a score modification reads a tensor at a float index");
      at.push_back(v->getType().isIndex()
                       ? *v
                       : arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                                    *v)
                             .getResult());
    }
    return tensor::ExtractOp::create(b, loc, e->value, at).getResult();
  }
  if (name == "arith.extui" || name == "arith.extsi" ||
      name == "arith.index_cast") {
    FailureOr<Value> v = emit(e->args[0], b.getI64Type());
    if (failed(v))
      return failure();
    if (!v->getType().isIntOrIndex())
      return fail("a score modification casts a float as an integer");
    if (name == "arith.index_cast")
      return v->getType().isIndex()
                 ? *v
                 : arith::IndexCastOp::create(b, loc, b.getIndexType(), *v)
                       .getResult();
    if (name == "arith.extui" && !v->getType().isIndex())
      return arith::ExtUIOp::create(b, loc, b.getI64Type(), *v).getResult();
    return toI64(*v);
  }
  if (name == "arith.fptosi") {
    FailureOr<Value> v = emitF32(e->args[0]);
    if (failed(v))
      return failure();
    return arith::FPToSIOp::create(b, loc, b.getI64Type(), *v).getResult();
  }
  if (name == "math.absi" || name == "arith.minsi" || name == "arith.maxsi" ||
      name == "arith.addi" || name == "arith.subi" || name == "arith.muli") {
    SmallVector<Value> operands;
    for (Expr *arg : e->args) {
      FailureOr<Value> v = emit(arg, b.getI64Type());
      if (failed(v))
        return failure();
      if (!v->getType().isIntOrIndex())
        return fail("a score modification applies " + name + " to a float");
      operands.push_back(toI64(*v));
    }
    return create(operands, b.getI64Type());
  }
  return fail("a score modification holds " + name +
              ", which the fused op cannot rebuild");
}

LogicalResult mlir::flash::detail::buildScoreModRegion(
    OpBuilder &builder, AttentionOp op, const AttentionMatch &m,
    ArrayRef<AffineExpr> fromP, std::string &reason) {
  OpBuilder::InsertionGuard guard(builder);
  Location loc = op.getLoc();
  Type index = builder.getIndexType();
  Block *body = builder.createBlock(
      &op.getScoreMod(), {}, {builder.getF32Type(), index, index, index, index},
      SmallVector<Location>(5, loc));
  ScoreModEmitter emitter(builder, loc, m, fromP, *body, reason);
  auto constant = [&](double c) {
    return arith::ConstantOp::create(builder, loc,
                                     builder.getF32FloatAttr(static_cast<float>(c)));
  };
  Value y = body->getArgument(0);
  if (m.modified) {
    FailureOr<Value> g = emitter.emitF32(m.modified);
    if (failed(g))
      return failure();
    y = *g;
    if (m.modFactor != 1.0)
      y = arith::MulFOp::create(builder, loc, y, constant(m.modFactor));
  }
  for (auto [term, factor] : m.modTerms) {
    FailureOr<Value> t = emitter.emitF32(term);
    if (failed(t))
      return failure();
    Value scaled = *t;
    if (factor == -1.0) {
      y = arith::SubFOp::create(builder, loc, y, scaled);
      continue;
    }
    if (factor != 1.0)
      scaled = arith::MulFOp::create(builder, loc, scaled, constant(factor));
    y = arith::AddFOp::create(builder, loc, y, scaled);
  }
  YieldOp::create(builder, loc, y);
  return success();
}
