//===- FlashGPUDialect.cpp - flashgpu dialect and operations ----*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::flashgpu;

#include "flash/Dialect/FlashGPU/IR/FlashGPUDialect.cpp.inc"

void FlashGPUDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.cpp.inc"

LogicalResult WarpgroupMmaOp::verify() {
  int64_t n = getN(), slices = getSlices(), kSteps = getKSteps();
  if (n % 8 != 0)
    return emitOpError("n = ") << n << " is not a multiple of 8";
  Type et = getElementType();
  if (!et.isF16() && !et.isBF16())
    return emitOpError("element type must be f16 or bf16, got ") << et;
  int64_t perThread = slices * n / 2;
  if (getResult().getType().getNumElements() != perThread)
    return emitOpError("result holds ")
           << getResult().getType().getNumElements()
           << " values per thread; " << slices << " slice(s) of m64n" << n
           << " hold " << perThread;
  if (bool(getADescriptor()) == bool(getAFragments()))
    return emitOpError("needs A as exactly one of a shared-memory descriptor "
                       "(a_desc) or register fragments (a_regs)");
  if (getADescriptor() && !getARows())
    return emitOpError("a_desc needs a_rows (the A tile's row count)");
  if (getAFragments() && getARows())
    return emitOpError("a_rows describes a shared A tile; A is in registers");
  // 64-column panels of a 128-byte-swizzled tile start on 1024-byte
  // boundaries (the descriptors' stride offset): whole groups of 8 rows.
  if (std::optional<uint64_t> rows = getARows(); rows && *rows % 8 != 0)
    return emitOpError("a_rows = ") << *rows << " is not a multiple of 8";
  if (getBRows() % 8 != 0)
    return emitOpError("b_rows = ") << getBRows() << " is not a multiple of 8";
  if (getAMMajor() && !getADescriptor())
    return emitOpError("a_m_major describes a shared A tile; A is in "
                       "registers");
  if (getAMMajor() && (int64_t)*getARows() < 16 * kSteps)
    return emitOpError("a_rows = ")
           << *getARows() << " has fewer rows than " << kSteps
           << " k step(s) of 16 (an m-major A has one row per reduction "
              "index)";
  if (getADescriptor() && !getAMMajor() && (int64_t)*getARows() < 64 * slices)
    return emitOpError("a_rows = ")
           << *getARows() << " has fewer rows than " << slices
           << " slice(s) of 64";
  if (auto frags = getAFragments()) {
    int64_t words = 4 * slices * kSteps;
    if (frags.getType().getNumElements() != words)
      return emitOpError("a_regs holds ")
             << frags.getType().getNumElements() << " words; " << slices
             << " slice(s) of " << kSteps << " k step(s) need " << words;
  }
  // K-major B ([n, k] rows) has one row per output column, the other
  // layout ([k, n] rows) one per reduction index.
  int64_t needRows = getBKMajor() ? n : 16 * kSteps;
  if ((int64_t)getBRows() < needRows)
    return emitOpError("b_rows = ")
           << getBRows() << " is less than the " << needRows << " rows that "
           << (getBKMajor() ? "n" : "k = 16 * k_steps") << " reads";
  // An async MMA's accumulators are in flight until a wait returns them.
  if (getAsync())
    for (Operation *user : getResult().getUsers())
      if (!isa<WarpgroupMmaWaitOp>(user))
        return emitOpError("is async: its result may only be used by "
                           "flashgpu.warpgroup_mma_wait, not by ")
               << user->getName();
  return success();
}

LogicalResult WarpgroupMmaWaitOp::verify() {
  bool completesOne = llvm::any_of(getValues(), [](Value v) {
    auto mma = v.getDefiningOp<WarpgroupMmaOp>();
    return mma && mma.getAsync();
  });
  if (!completesOne)
    return emitOpError("returns no async flashgpu.warpgroup_mma result");
  return success();
}

LogicalResult WarpgroupMmaWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  llvm::append_range(inferredReturnTypes, operands.getTypes());
  return success();
}

LogicalResult CtasPerSmOp::verify() {
  if (!(*this)->getParentOfType<gpu::LaunchOp>() &&
      !(*this)->getParentOfType<gpu::GPUFuncOp>())
    return emitOpError("states a kernel's launch bound: it must be inside a "
                       "gpu.launch or gpu.func");
  return success();
}

/// An op that addresses an element of `memref` in global memory by
/// `indices`: one index per dimension, and no other address space named.
/// `role` names the memref in the diagnostics, `verb` (with its
/// preposition) what the op does there.
static LogicalResult verifyGlobalElement(Operation *op, Value memref,
                                         ValueRange indices, StringRef role,
                                         StringRef verb) {
  auto type = cast<MemRefType>(memref.getType());
  if (static_cast<int64_t>(indices.size()) != type.getRank())
    return op->emitOpError("takes one index per dimension of its ")
           << role << " (" << type.getRank() << "), got " << indices.size();
  if (auto space =
          dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
      space && space.getValue() != gpu::AddressSpace::Global)
    return op->emitOpError() << verb << " global memory, not " << space;
  return success();
}

LogicalResult ReduceAddOp::verify() {
  if (failed(verifyGlobalElement(*this, getDest(), getIndices(),
                                 "destination", "reduces into")))
    return failure();
  if (auto vector = dyn_cast<VectorType>(getValue().getType());
      vector && vector.getNumElements() != 2 && vector.getNumElements() != 4)
    return emitOpError("adds 1, 2 or 4 adjacent elements, not ")
           << vector.getNumElements();
  return success();
}

LogicalResult LastArrivalOp::verify() {
  if (failed(verifyGlobalElement(*this, getCounter(), getIndices(), "counter",
                                 "counts in")))
    return failure();
  if (getBarrierId().has_value() != getBarrierThreads().has_value())
    return emitOpError("names a barrier by both its id and its threads, or "
                       "by neither (the CTA's)");
  if (std::optional<uint32_t> id = getBarrierId(); id && *id > 15)
    return emitOpError("names barrier ") << *id << "; a CTA has 0 to 15";
  if (std::optional<uint32_t> threads = getBarrierThreads();
      threads && (*threads % 32 != 0 || *threads > 1024))
    return emitOpError("synchronises whole warps of a CTA (at most 1024 "
                       "threads), not ")
           << *threads << " threads";
  return success();
}
