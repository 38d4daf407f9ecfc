//===- TensorMaps.cpp - a kernel's TMA tensor maps --------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "TensorMaps.h"

#include "flash/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using flash::TensorMaps;

TensorMaps::TensorMaps(gpu::LaunchOp launch) : launch(launch) {
  auto func = launch->getParentOfType<func::FuncOp>();
  for (BlockArgument arg : func.getArguments()) {
    auto entries =
        func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), kTensorMapsAttr);
    // The launch's own maps (another launch of the function has others).
    if (!entries || llvm::none_of(arg.getUsers(), [&](Operation *user) {
          return launch->isAncestor(user);
        }))
      continue;
    argument = arg;
    for (auto entry : entries.getAsRange<DictionaryAttr>()) {
      auto get = [&](StringRef key) {
        return cast<IntegerAttr>(entry.get(key)).getInt();
      };
      maps.push_back({get("tensor"), get("row_dim"), get("box_rows"),
                      get("box_cols"), get("swizzle_bytes") == 0});
      addresses.push_back(Value());
      descriptors.push_back(Value());
    }
  }
}

int64_t TensorMaps::panelColumns(Type elementType) {
  return 128 / (elementType.getIntOrFloatBitWidth() / 8);
}

int64_t TensorMaps::indexOf(BlockArgument tensor, int64_t rowDim, int64_t rows,
                            Type elementType, bool rowVector) {
  int64_t cols = rowVector ? rows : panelColumns(elementType);
  Map map{tensor.getArgNumber(), rowDim, rows, cols, rowVector};
  auto it = llvm::find(maps, map);
  if (it != maps.end())
    return it - maps.begin();
  maps.push_back(map);
  addresses.push_back(Value());
  descriptors.push_back(Value());
  describe();
  return maps.size() - 1;
}

Value TensorMaps::address(BlockArgument tensor, int64_t rowDim, int64_t rows,
                          Type elementType, bool rowVector) {
  int64_t index = indexOf(tensor, rowDim, rows, elementType, rowVector);
  if (addresses[index])
    return addresses[index];
  Location loc = launch.getLoc();
  OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer());
  Value address = arith::AddIOp::create(
      b, loc, arith::IndexCastOp::create(b, loc, b.getI64Type(), base),
      arith::ConstantIntOp::create(b, loc, b.getI64Type(), 128 * index));
  addresses[index] = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), address);
  return addresses[index];
}

Value TensorMaps::descriptor(BlockArgument tensor, int64_t rowDim, int64_t rows,
                             Type elementType, bool rowVector) {
  int64_t index = indexOf(tensor, rowDim, rows, elementType, rowVector);
  if (descriptors[index])
    return descriptors[index];
  Value ptr = address(tensor, rowDim, rows, elementType, rowVector);
  OpBuilder b(launch.getContext());
  b.setInsertionPointAfterValue(ptr);
  SmallVector<int64_t> shape(cast<MemRefType>(tensor.getType()).getRank(), 1);
  shape[rowDim] = rows;
  if (!rowVector)
    shape.back() = maps[index].cols;
  auto box = MemRefType::get(
      shape, elementType, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
  auto type = nvgpu::TensorMapDescriptorType::get(
      b.getContext(), box,
      rowVector ? nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE
                : nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  descriptors[index] =
      UnrealizedConversionCastOp::create(b, ptr.getLoc(), type, ptr)
          .getResult(0);
  return descriptors[index];
}

/// The function's tensor-map buffer, appended as its last argument.
Value TensorMaps::buffer() {
  auto func = launch->getParentOfType<func::FuncOp>();
  if (!argument) {
    unsigned n = func.getNumArguments();
    auto type = MemRefType::get({ShapedType::kDynamic},
                                IntegerType::get(func.getContext(), 8));
    if (failed(func.insertArgument(n, type, {}, launch.getLoc())))
      return nullptr;
    argument = func.getArgument(n);
    describe();
  }
  return argument;
}

void TensorMaps::describe() {
  if (!argument)
    return;
  auto func = launch->getParentOfType<func::FuncOp>();
  Builder b(func.getContext());
  SmallVector<Attribute> entries;
  for (const Map &map : maps)
    entries.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("tensor", b.getI64IntegerAttr(map.arg)),
         b.getNamedAttr("row_dim", b.getI64IntegerAttr(map.rowDim)),
         b.getNamedAttr("box_rows", b.getI64IntegerAttr(map.rows)),
         b.getNamedAttr("box_cols", b.getI64IntegerAttr(map.cols)),
         b.getNamedAttr("swizzle_bytes",
                        b.getI64IntegerAttr(map.rowVector ? 0 : 128))}));
  func.setArgAttr(argument.getArgNumber(), flash::kTensorMapsAttr,
                  b.getArrayAttr(entries));
}

bool flash::clipsAtTensorEnd(Value size, BlockArgument tensor, int64_t rowDim,
                             Value offset, int64_t rows) {
  auto min = size.getDefiningOp<arith::MinSIOp>();
  if (!min)
    return false;
  Value lhs = min.getLhs(), rhs = min.getRhs();
  if (getConstantIntValue(lhs) == rows)
    std::swap(lhs, rhs);
  auto sub = lhs.getDefiningOp<arith::SubIOp>();
  auto dim = sub ? sub.getLhs().getDefiningOp<memref::DimOp>() : nullptr;
  auto arg = dim ? dyn_cast<BlockArgument>(dim.getSource()) : BlockArgument();
  return getConstantIntValue(rhs) == rows && arg && sub.getRhs() == offset &&
         arg.getOwner() == tensor.getOwner() &&
         getConstantIntValue(dim.getIndex()) == rowDim;
}

std::optional<flash::TensorSlice>
flash::matchTensorSlice(memref::SubViewOp sub, int64_t cols) {
  auto tensor =
      sub ? dyn_cast<BlockArgument>(sub.getSource()) : BlockArgument();
  if (!tensor || !isa<func::FuncOp>(tensor.getOwner()->getParentOp()))
    return std::nullopt;
  auto type = cast<MemRefType>(tensor.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || rank > 5 || type.getDimSize(rank - 1) != cols ||
      !llvm::all_of(sub.getStaticStrides(), [](int64_t s) { return s == 1; }) ||
      sub.getStaticOffsets().back() != 0 || sub.getStaticSizes().back() != cols)
    return std::nullopt;
  TensorSlice slice{tensor, sub.getMixedOffsets(), -1, Value()};
  SmallVector<OpFoldResult> sizes = sub.getMixedSizes();
  for (int64_t d = 0; d + 1 < rank; ++d) {
    if (getConstantIntValue(sizes[d]) == 1)
      continue;
    if (slice.rowDim >= 0)
      return std::nullopt;
    slice.rowDim = d;
  }
  if (slice.rowDim < 0)
    return std::nullopt;
  slice.rows = dyn_cast<Value>(sizes[slice.rowDim]);
  if (!slice.rows)
    return std::nullopt;
  return slice;
}
