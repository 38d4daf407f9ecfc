//===- GpuMapping.cpp - helpers shared by the GPU mapping steps -*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "GpuMapping.h"

#include "flash/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

static constexpr std::pair<flash::TileStorage, llvm::StringLiteral>
    kStorageNames[] = {
        {flash::TileStorage::Registers, "registers"},
        {flash::TileStorage::Swizzled, "swizzled"},
        {flash::TileStorage::Accumulators, "accumulators"},
        {flash::TileStorage::ReductionStage, "reduction_stage"},
};

std::optional<flash::TileStorage> flash::getTileStorage(Operation *alloc) {
  auto name = alloc->getAttrOfType<StringAttr>(kTileStorageAttr);
  if (!name)
    return std::nullopt;
  for (auto [storage, known] : kStorageNames)
    if (name.getValue() == known)
      return storage;
  return std::nullopt;
}

void flash::setTileStorage(Operation *alloc, TileStorage storage) {
  for (auto [known, name] : kStorageNames)
    if (known == storage)
      alloc->setAttr(kTileStorageAttr,
                     StringAttr::get(alloc->getContext(), name));
}

SmallVector<gpu::LaunchOp> flash::collectLaunches(Operation *root) {
  SmallVector<gpu::LaunchOp> launches;
  root->walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
  return launches;
}

FailureOr<int64_t> flash::launchThreads(gpu::LaunchOp launch, StringRef pass) {
  std::optional<int64_t> threads = getConstantIntValue(launch.getBlockSizeX());
  if (!threads)
    return launch.emitError(pass)
           << ": expected a launch with a constant number of threads";
  return *threads;
}

bool flash::addsAtomically(gpu::LaunchOp launch) {
  return launch.getBody()
      .walk([](flash::AtomicAddOp) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

linalg::FillOp flash::findZeroFill(linalg::GenericOp op, Value c) {
  // The buffer a view is of, up to the carved tile (a view of the shared
  // window that tiles live apart in).
  auto tileOf = [](Value v) {
    while (Operation *def = v.getDefiningOp()) {
      auto view = dyn_cast<ViewLikeOpInterface>(def);
      if (!view || isa<memref::MemorySpaceCastOp>(def))
        break;
      v = view.getViewSource();
    }
    return v;
  };
  Value tile = tileOf(c);
  auto names = [&](Operation *p) {
    return p
        ->walk([&](Operation *q) {
          return llvm::any_of(q->getOperands(),
                              [&](Value v) {
                                return isa<MemRefType>(v.getType()) &&
                                       tileOf(v) == tile;
                              })
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  };
  for (Operation *p = op->getPrevNode(); p; p = p->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(p);
        fill && fill.getDpsInitOperand(0)->get() == c)
      return matchPattern(fill.getDpsInputOperand(0)->get(), m_AnyZeroFloat())
                 ? fill
                 : nullptr;
    if (names(p))
      return nullptr;
  }
  return nullptr;
}

flash::AtomicAddOp flash::findAtomicAddOfResult(linalg::GenericOp op, Value c) {
  for (Operation *p = op->getNextNode(); p; p = p->getNextNode()) {
    if (auto add = dyn_cast<flash::AtomicAddOp>(p)) {
      Value tile = add.getTile();
      if (auto view = tile.getDefiningOp<memref::SubViewOp>();
          view && view.getSource() == c && view.hasZeroOffset() &&
          view.hasUnitStride() &&
          view.getStaticSizes().back() ==
              cast<MemRefType>(c.getType()).getDimSize(1))
        return add;
      return tile == c ? add : nullptr;
    }
    if (!isa<memref::SubViewOp, arith::ConstantOp>(p))
      return nullptr;
  }
  return nullptr;
}

Value flash::viewRoot(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

Value flash::rowsAreAligned(OpBuilder &b, Location loc, Value memref,
                            int64_t elementsPer16Bytes) {
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  auto isMultiple = [&](Value v, int64_t m) -> Value {
    Value rem = arith::RemUIOp::create(b, loc, v, idx(m));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, idx(0));
  };
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  ValueRange strides = meta.getStrides();
  Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                   strides.back(), idx(1));
  for (Value stride : strides.drop_back())
    ok = arith::AndIOp::create(b, loc, ok,
                               isMultiple(stride, elementsPer16Bytes));
  ok = arith::AndIOp::create(b, loc, ok,
                             isMultiple(meta.getOffset(), elementsPer16Bytes));
  Value ptr = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  return arith::AndIOp::create(b, loc, ok, isMultiple(ptr, 16));
}

void flash::trapUnlessUnitInnerStride(OpBuilder &b, Location loc, Value dest) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, dest);
  Value strided = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, meta.getStrides().back(),
      arith::ConstantIndexOp::create(b, loc, 1));
  auto guard = scf::IfOp::create(b, loc, strided, /*withElseRegion=*/false);
  OpBuilder trap = guard.getThenBodyBuilder();
  LLVM::Trap::create(trap, loc);
}

Value flash::flatRowsView(OpBuilder &b, Location loc, Value dest) {
  auto type = cast<MemRefType>(dest.getType());
  int64_t cols = type.getDimSize(1);
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, dest);
  auto idx = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value strided = arith::OrIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                            meta.getStrides()[0], idx(cols)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                            meta.getStrides()[1], idx(1)));
  auto guard = scf::IfOp::create(b, loc, strided, /*withElseRegion=*/false);
  {
    OpBuilder trap = guard.getThenBodyBuilder();
    LLVM::Trap::create(trap, loc);
  }
  Value size = arith::MulIOp::create(b, loc, meta.getSizes()[0], idx(cols));
  auto flatType = MemRefType::get(
      {ShapedType::kDynamic}, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {1}),
      type.getMemorySpace());
  return memref::ReinterpretCastOp::create(
      b, loc, flatType, meta.getBaseBuffer(), OpFoldResult(meta.getOffset()),
      ArrayRef<OpFoldResult>{size}, ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}
