//===- KernelABI.cpp - kernel functions and their parameters ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelABI.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::driver;
namespace json = llvm::json;

std::string driver::typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

namespace {
/// Rank-4 [?, ?, ?, last] for Q, K, V, O; [?, ?, ?] for LSE; bias and mask
/// keep their unit (broadcast) dims.
RankedTensorType generalise(RankedTensorType t, bool keepLast, int64_t rank) {
  SmallVector<int64_t> shape(rank - t.getRank(), 1);
  llvm::append_range(shape, t.getShape());
  for (int64_t i = 0; i < rank; ++i) {
    bool last = i == rank - 1 && keepLast;
    if (!last)
      shape[i] = ShapedType::kDynamic;
  }
  return RankedTensorType::get(shape, t.getElementType());
}

RankedTensorType generaliseBroadcast(RankedTensorType t) {
  SmallVector<int64_t> shape(t.getShape());
  for (int64_t &d : shape)
    if (d != 1)
      d = ShapedType::kDynamic;
  return RankedTensorType::get(shape, t.getElementType());
}

/// The bias and mask parameters of an attention op, when it has them.
void addBroadcastParams(SmallVectorImpl<Param> &params, Value bias,
                        Value mask) {
  if (bias)
    params.push_back(
        {"bias", generaliseBroadcast(cast<RankedTensorType>(bias.getType()))});
  if (mask)
    params.push_back(
        {"mask", generaliseBroadcast(cast<RankedTensorType>(mask.getType()))});
}

/// A module with func @name(params...) whose parameters from `firstOutput`
/// on are written in place by the results of the op that `build` creates
/// from the parameters (looked up by name: null for an absent one).
OwningOpRef<ModuleOp>
buildModule(Location loc, StringRef name, ArrayRef<Param> params,
            size_t firstOutput,
            function_ref<Operation *(OpBuilder &,
                                     function_ref<Value(StringRef)>, TypeRange)>
                build) {
  OpBuilder b(loc.getContext());
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes, resultTypes;
  for (const Param &p : params)
    argTypes.push_back(p.type);
  for (size_t i = firstOutput; i < params.size(); ++i)
    resultTypes.push_back(params[i].type);
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(argTypes, resultTypes));
  for (size_t i = firstOutput; i < params.size(); ++i)
    func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(true));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](StringRef n) -> Value {
    for (auto [i, p] : llvm::enumerate(params))
      if (p.name == n)
        return entry->getArgument(i);
    return Value();
  };
  Operation *op = build(b, arg, resultTypes);
  SmallVector<Value> results;
  for (auto [i, r] : llvm::enumerate(op->getResults()))
    results.push_back(bufferization::MaterializeInDestinationOp::create(
                          b, loc, r, entry->getArgument(firstOutput + i))
                          .getResult());
  func::ReturnOp::create(b, loc, results);
  return module;
}

RankedTensorType generaliseRank4(Value v) {
  return generalise(cast<RankedTensorType>(v.getType()), true, 4);
}

} // namespace

/// func @name(q, k, v, [bias], [mask], o, [lse]) writing o and lse in place.
OwningOpRef<ModuleOp>
driver::buildKernelModule(AttentionOp op, StringRef name,
                          SmallVectorImpl<Param> &params) {
  params.append({{"q", generaliseRank4(op.getQuery())},
                 {"k", generaliseRank4(op.getKey())},
                 {"v", generaliseRank4(op.getValue())}});
  addBroadcastParams(params, op.getBias(), op.getMask());
  size_t firstOutput = params.size();
  params.push_back({"o", generaliseRank4(op.getOutput())});
  if (Value lse = op.getLse())
    params.push_back(
        {"lse", generalise(cast<RankedTensorType>(lse.getType()), false, 3)});
  return buildModule(op.getLoc(), name, params, firstOutput,
                     [&](OpBuilder &b, function_ref<Value(StringRef)> arg,
                         TypeRange types) -> Operation * {
                       return AttentionOp::create(
                           b, op.getLoc(), types, arg("q"), arg("k"), arg("v"),
                           arg("bias"), arg("mask"), /*runtime_scale=*/Value(),
                           b.getF32FloatAttr(op.getEffectiveScale()),
                           op.getCausalAttr(), op.getWindowAttr());
                     });
}

/// func @name(q, k, v, o, do, lse, [bias], [mask], dq, dk, dv) writing the
/// gradients in place (--flash-workspace-to-arguments appends `d`).
OwningOpRef<ModuleOp>
driver::buildBackwardKernelModule(AttentionBackwardOp op, StringRef name,
                                  SmallVectorImpl<Param> &params) {
  params.append({{"q", generaliseRank4(op.getQuery())},
                 {"k", generaliseRank4(op.getKey())},
                 {"v", generaliseRank4(op.getValue())},
                 {"o", generaliseRank4(op.getOutput())},
                 {"do", generaliseRank4(op.getGradOutput())},
                 {"lse", generalise(op.getLse().getType(), false, 3)}});
  addBroadcastParams(params, op.getBias(), op.getMask());
  size_t firstOutput = params.size();
  params.append({{"dq", generaliseRank4(op.getQuery())},
                 {"dk", generaliseRank4(op.getKey())},
                 {"dv", generaliseRank4(op.getValue())}});
  return buildModule(op.getLoc(), name, params, firstOutput,
                     [&](OpBuilder &b, function_ref<Value(StringRef)> arg,
                         TypeRange types) -> Operation * {
                       return AttentionBackwardOp::create(
                           b, op.getLoc(), types, arg("q"), arg("k"), arg("v"),
                           arg("o"), arg("do"), arg("lse"), arg("bias"),
                           arg("mask"),
                           b.getF32FloatAttr(op.getEffectiveScale()),
                           op.getCausalAttr(), op.getWindowAttr());
                     });
}

json::Object driver::describeParam(const Param &p) {
  json::Array shape;
  for (int64_t d : p.type.getShape())
    shape.push_back(ShapedType::isDynamic(d) ? json::Value(nullptr)
                                             : json::Value(d));
  return json::Object{{"name", p.name},
                      {"rank", p.type.getRank()},
                      {"shape", std::move(shape)},
                      {"dtype", typeName(p.type.getElementType())}};
}

std::optional<json::Object> driver::describeGridDim(Value v,
                                                    ArrayRef<Param> params) {
  IntegerAttr c;
  if (matchPattern(v, m_Constant(&c)))
    return json::Object{{"const", c.getInt()}};
  int64_t divisor = 1;
  if (auto div = v.getDefiningOp<arith::CeilDivSIOp>()) {
    if (!matchPattern(div.getRhs(), m_Constant(&c)))
      return std::nullopt;
    divisor = c.getInt();
    v = div.getLhs();
  }
  auto dim = v.getDefiningOp<memref::DimOp>();
  if (!dim)
    return std::nullopt;
  auto arg = dyn_cast<BlockArgument>(dim.getSource());
  std::optional<int64_t> index = dim.getConstantIndex();
  if (!arg || !index)
    return std::nullopt;
  json::Object o{{"tensor", params[arg.getArgNumber()].name}, {"dim", *index}};
  if (divisor != 1)
    o["ceil_div"] = divisor;
  return o;
}
