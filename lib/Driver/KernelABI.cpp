//===- KernelABI.cpp - kernel functions and their parameters ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "KernelABI.h"

#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

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

/// The offsets of packed sequences, and the most query rows of a sequence
/// (the grid's query blocks, from the caller as FlashAttention's
/// max_seqlen_q); with `keyBound` the most keys too (max_seqlen_k: the
/// backward's dK/dV grid).
void addVarlenParams(SmallVectorImpl<Param> &params, Value cuSeqlensQ,
                     Value cuSeqlensK, bool keyBound) {
  for (auto [name, offsets] : {std::pair("cu_seqlens_q", cuSeqlensQ),
                               std::pair("cu_seqlens_k", cuSeqlensK)})
    params.push_back(
        {name,
         generalise(cast<RankedTensorType>(offsets.getType()), false, 1)});
  Builder b(cuSeqlensQ.getContext());
  params.push_back({"max_seqlen_q", RankedTensorType(), b.getI64Type(),
                    kMaxQueryRowsAttr.str()});
  if (keyBound)
    params.push_back({"max_seqlen_k", RankedTensorType(), b.getI64Type(),
                      kMaxKeyRowsAttr.str()});
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
    argTypes.push_back(p.scalar ? p.scalar : Type(p.type));
  for (size_t i = firstOutput; i < params.size(); ++i)
    resultTypes.push_back(params[i].type);
  auto func = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(argTypes, resultTypes));
  for (size_t i = firstOutput; i < params.size(); ++i)
    func.setArgAttr(i, "bufferization.writable", b.getBoolAttr(true));
  for (auto [i, p] : llvm::enumerate(params))
    if (!p.tag.empty())
      func.setArgAttr(i, p.tag, b.getUnitAttr());
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

/// The score_mod tensors as parameters mod0, mod1, ... of their own types.
void addScoreModParams(SmallVectorImpl<Param> &params, ArrayRef<Value> tensors) {
  for (auto [i, t] : llvm::enumerate(tensors))
    params.push_back(
        {"mod" + std::to_string(i), cast<RankedTensorType>(t.getType())});
}

/// Clones `from` into the empty region `to` of the kernel's op: the tensors
/// it read become the kernel's parameters, its constant scalars are cloned
/// into it.
void cloneScoreMod(OpBuilder &b, Region &from, Region &to,
                   ArrayRef<Value> tensors,
                   function_ref<Value(StringRef)> arg) {
  if (from.empty())
    return;
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(from, above);
  IRMapping map;
  for (auto [i, t] : llvm::enumerate(tensors))
    map.map(t, arg("mod" + std::to_string(i)));
  from.cloneInto(&to, map);
  // The rest are constant scalars (scoreModTensors checked): cloned in.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&to.front());
  for (Value v : above) {
    if (map.contains(v))
      continue;
    Value copy = b.clone(*v.getDefiningOp())->getResult(0);
    v.replaceUsesWithIf(copy, [&](OpOperand &use) {
      return to.isAncestor(use.getOwner()->getParentRegion());
    });
  }
}

} // namespace

FailureOr<SmallVector<Value>>
driver::scoreModTensors(Operation *op, Region &scoreMod, std::string &why) {
  SmallVector<Value> tensors;
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(scoreMod, above);
  for (Value v : above) {
    if (matchPattern(v, m_Constant()) && !isa<ShapedType>(v.getType()))
      continue;
    if (isa<RankedTensorType>(v.getType()) && !matchPattern(v, m_Constant())) {
      tensors.push_back(v);
      continue;
    }
    llvm::raw_string_ostream os(why);
    os << "the score_mod reads " << v.getType()
       << (matchPattern(v, m_Constant()) ? " constant" : " value")
       << " from outside the op; a kernel takes constant scalars and tensors "
          "(as parameters mod0, mod1, ...)";
    return failure();
  }
  return tensors;
}

json::Value driver::describeScoreMod(Region &scoreMod) {
  if (scoreMod.empty())
    return nullptr;
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.useLocalScope();
  for (Operation &op : scoreMod.front()) {
    op.print(os, flags);
    os << "; ";
  }
  return text;
}

/// func @name(q, k, v, [bias], [mask], [sinks], [mod0, ...], o, [lse])
/// writing o and lse in place.
OwningOpRef<ModuleOp>
driver::buildKernelModule(AttentionOp op, StringRef name,
                          SmallVectorImpl<Param> &params) {
  // Paged K and V keep their page size: the key blocks divide it.
  auto keysType = [&](Value v) {
    RankedTensorType type = generaliseRank4(v);
    if (!op.getBlockTable())
      return type;
    SmallVector<int64_t> shape(type.getShape());
    shape[2] = cast<RankedTensorType>(v.getType()).getDimSize(2);
    return RankedTensorType::get(shape, type.getElementType());
  };
  params.append({{"q", generaliseRank4(op.getQuery())},
                 {"k", keysType(op.getKey())},
                 {"v", keysType(op.getValue())}});
  addBroadcastParams(params, op.getBias(), op.getMask());
  if (Value sinks = op.getSinks())
    params.push_back(
        {"sinks",
         generalise(cast<RankedTensorType>(sinks.getType()), false, 1)});
  if (Value lengths = op.getKeyLengths())
    params.push_back(
        {"key_lengths",
         generalise(cast<RankedTensorType>(lengths.getType()), false, 1)});
  if (Value table = op.getBlockTable())
    params.push_back(
        {"block_table",
         generalise(cast<RankedTensorType>(table.getType()), false, 2)});
  if (op.isVarlen())
    addVarlenParams(params, op.getCuSeqlensQ(), op.getCuSeqlensK(),
                    /*keyBound=*/false);
  std::string why;
  SmallVector<Value> modTensors =
      *scoreModTensors(op, op.getScoreMod(), why); // checked by the driver
  addScoreModParams(params, modTensors);
  size_t firstOutput = params.size();
  params.push_back({"o", generaliseRank4(op.getOutput())});
  if (Value lse = op.getLse())
    params.push_back(
        {"lse", generalise(cast<RankedTensorType>(lse.getType()), false, 3)});
  return buildModule(op.getLoc(), name, params, firstOutput,
                     [&](OpBuilder &b, function_ref<Value(StringRef)> arg,
                         TypeRange types) -> Operation * {
                       auto kernelOp = AttentionOp::create(
                           b, op.getLoc(), types, arg("q"), arg("k"), arg("v"),
                           arg("bias"), arg("mask"), arg("sinks"),
                           arg("key_lengths"), arg("block_table"),
                           arg("cu_seqlens_q"), arg("cu_seqlens_k"),
                           /*runtime_scale=*/Value(),
                           b.getF32FloatAttr(op.getEffectiveScale()),
                           op.getCausalAttr(), op.getWindowAttr());
                       cloneScoreMod(b, op.getScoreMod(),
                                     kernelOp.getScoreMod(), modTensors, arg);
                       return kernelOp;
                     });
}

void driver::addKeySplitParams(ModuleOp module, int64_t valueDim, bool counters,
                               SmallVectorImpl<Param> &params) {
  auto func = *module.getOps<func::FuncOp>().begin();
  OpBuilder b(module.getContext());
  constexpr int64_t dyn = ShapedType::kDynamic;
  struct Workspace {
    StringRef tag;
    SmallVector<int64_t> shape;
    Type element;
  };
  SmallVector<Workspace> workspaces = {
      {"o_split", {dyn, dyn, dyn, dyn, valueDim}, b.getF32Type()},
      {"lse_split", {dyn, dyn, dyn, dyn}, b.getF32Type()}};
  if (counters)
    workspaces.push_back(
        {kSplitCountersWorkspace, {dyn, dyn, dyn}, b.getI32Type()});
  for (auto &[tag, shape, element] : workspaces) {
    auto type = RankedTensorType::get(shape, element);
    DictionaryAttr attrs = b.getDictionaryAttr(
        {b.getNamedAttr("bufferization.writable", b.getBoolAttr(true)),
         b.getNamedAttr(kWorkspaceAttr, b.getStringAttr(tag))});
    (void)func.insertArgument(func.getNumArguments(), type, attrs,
                              func.getLoc());
    params.push_back({tag.str(), type});
  }
}

/// func @name(q, k, v, o, do, lse, [bias], [mask], [cu_seqlens_q,
/// cu_seqlens_k, max_seqlen_q, max_seqlen_k], dq, dk, dv) writing the
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
  if (op.isVarlen())
    addVarlenParams(params, op.getCuSeqlensQ(), op.getCuSeqlensK(),
                    /*keyBound=*/true);
  std::string why;
  SmallVector<Value> modTensors =
      *scoreModTensors(op, op.getScoreMod(), why); // checked by the driver
  addScoreModParams(params, modTensors);
  size_t firstOutput = params.size();
  params.append({{"dq", generaliseRank4(op.getQuery())},
                 {"dk", generaliseRank4(op.getKey())},
                 {"dv", generaliseRank4(op.getValue())}});
  return buildModule(op.getLoc(), name, params, firstOutput,
                     [&](OpBuilder &b, function_ref<Value(StringRef)> arg,
                         TypeRange types) -> Operation * {
                       auto kernelOp = AttentionBackwardOp::create(
                           b, op.getLoc(), types, arg("q"), arg("k"), arg("v"),
                           arg("o"), arg("do"), arg("lse"), arg("bias"),
                           arg("mask"), /*sinks=*/Value(), arg("cu_seqlens_q"),
                           arg("cu_seqlens_k"),
                           b.getF32FloatAttr(op.getEffectiveScale()),
                           op.getCausalAttr(), op.getWindowAttr());
                       cloneScoreMod(b, op.getScoreMod(),
                                     kernelOp.getScoreMod(), modTensors, arg);
                       return kernelOp;
                     });
}

json::Object driver::describeParam(const Param &p) {
  if (p.scalar)
    return json::Object{
        {"name", p.name}, {"kind", "scalar"}, {"dtype", typeName(p.scalar)}};
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
  if (auto product = v.getDefiningOp<arith::MulIOp>()) {
    std::optional<json::Object> lhs = describeGridDim(product.getLhs(), params);
    std::optional<json::Object> rhs = describeGridDim(product.getRhs(), params);
    if (!lhs || !rhs)
      return std::nullopt;
    return json::Object{
        {"product", json::Array{std::move(*lhs), std::move(*rhs)}}};
  }
  int64_t divisor = 1;
  if (auto div = v.getDefiningOp<arith::CeilDivSIOp>()) {
    if (!matchPattern(div.getRhs(), m_Constant(&c)))
      return std::nullopt;
    divisor = c.getInt();
    v = div.getLhs();
  }
  // A scalar parameter (through its cast to index).
  if (auto cast = v.getDefiningOp<arith::IndexCastOp>())
    if (auto arg = dyn_cast<BlockArgument>(cast.getIn());
        arg && arg.getArgNumber() < params.size() &&
        params[arg.getArgNumber()].scalar) {
      json::Object o{{"scalar", params[arg.getArgNumber()].name}};
      if (divisor != 1)
        o["ceil_div"] = divisor;
      return o;
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
