//===- FlashGPUToLLVM.cpp - flashgpu ops as inline PTX ----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// Each flashgpu op becomes one llvm.inline_asm block: the only place where
// the project writes PTX by hand.
//
//===----------------------------------------------------------------------===//

#include "flash/Conversion/FlashGPUToLLVM.h"
#include "flash/Conversion/Passes.h"
#include "flash/Dialect/FlashGPU/IR/FlashGPUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::flash {
#define GEN_PASS_DEF_CONVERTFLASHGPUTOLLVMPASS
#include "flash/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flashgpu;

namespace {

/// The high word of every descriptor: stride byte offset 1024 (eight
/// 128-byte rows) and the 128-byte swizzle mode.
constexpr uint32_t kDescriptorHigh = (1024 >> 4) | (1u << 30);

/// A side-effecting asm block returning `fields` as one struct.
static LLVM::InlineAsmOp createAsm(PatternRewriter &rewriter, Location loc,
                                   ArrayRef<Type> fields, ValueRange operands,
                                   StringRef text, StringRef constraints) {
  auto resultType =
      LLVM::LLVMStructType::getLiteral(rewriter.getContext(), fields);
  return LLVM::InlineAsmOp::create(
      rewriter, loc, resultType, operands, text, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None,
      LLVM::AsmDialectAttr::get(rewriter.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
}

/// wgmma.mma_async per slice and k step between one fence and one wait.
/// Descriptors advance in the asm (`add.u32` on the low word): 32 bytes per
/// k step along a K-major row and one panel (rows * 128 bytes) every four;
/// 16 rows (2,048 bytes) per k step down a [k, n] B or a [k, m] A.
struct LowerWarpgroupMma : OpRewritePattern<WarpgroupMmaOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WarpgroupMmaOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t n = op.getN(), steps = op.getKSteps(), slices = op.getSlices();
    int64_t perSlice = n / 2, outputs = slices * perSlice;
    bool zeroed = !op.getAccumulator();
    bool aInRegisters = bool(op.getAFragments());

    auto extract = [&](Value vector, int64_t i) -> Value {
      return vector::ExtractOp::create(rewriter, loc, vector,
                                       ArrayRef<int64_t>{i});
    };
    std::string asmText, constraints;
    llvm::raw_string_ostream text(asmText), cons(constraints);
    SmallVector<Value> operands;
    for (int64_t o = 0; o < outputs; ++o)
      cons << (o ? "," : "") << "=f";
    if (!zeroed)
      for (int64_t o = 0; o < outputs; ++o) {
        cons << "," << o; // tied to output o
        operands.push_back(extract(op.getAccumulator(), o));
      }
    auto next = [&] { return outputs + (int64_t)operands.size(); };
    int64_t aFirst = next();
    if (aInRegisters)
      for (int64_t w = 0; w < 4 * slices * steps; ++w) {
        operands.push_back(extract(op.getAFragments(), w));
        cons << ",r";
      }
    int64_t descA = next();
    if (!aInRegisters) {
      operands.push_back(op.getADescriptor());
      cons << ",r";
    }
    int64_t descB = next();
    operands.push_back(op.getBDescriptor());
    cons << ",r";
    int64_t one = descB + 1;
    operands.push_back(
        LLVM::ConstantOp::create(rewriter, loc, rewriter.getI32IntegerAttr(1)));
    cons << ",r,~{memory}";

    StringRef type = op.getElementType().isBF16() ? "bf16" : "f16";
    int64_t aPanel = aInRegisters ? 0 : *op.getARows() * 128;
    int64_t bPanel = op.getBRows() * 128;
    // p: accumulate; z: the first step of a zeroed accumulator.
    text << "{\n.reg .b64 da, db;\n.reg .b32 t;\n.reg .pred p, z;\n"
         << "setp.ne.b32 p, $" << one << ", 0;\nsetp.eq.b32 z, $" << one
         << ", 0;\nwgmma.fence.sync.aligned;\n";
    for (int64_t kk = 0; kk < steps; ++kk) {
      int64_t bOffset = op.getBKMajor() ? (kk / 4) * bPanel + (kk % 4) * 32
                                        : kk * 16 * 128;
      text << "add.u32 t, $" << descB << ", " << (bOffset >> 4)
           << ";\nmov.b64 db, {t, " << kDescriptorHigh << "};\n";
      for (int64_t mi = 0; mi < slices; ++mi) {
        std::string a;
        if (aInRegisters) {
          int64_t first = aFirst + 4 * (mi * steps + kk);
          a = llvm::formatv("{{${0}, ${1}, ${2}, ${3}}", first, first + 1,
                            first + 2, first + 3);
        } else {
          // An m-major A ([k, m] rows): 16 rows per k step, one 64-column
          // panel per slice.
          int64_t aOffset = op.getAMMajor() ? kk * 16 * 128 + mi * aPanel
                                            : (kk / 4) * aPanel +
                                                  mi * 64 * 128 + (kk % 4) * 32;
          text << "add.u32 t, $" << descA << ", " << (aOffset >> 4)
               << ";\nmov.b64 da, {t, " << kDescriptorHigh << "};\n";
          a = "da";
        }
        text << "wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type
             << "." << type << " {";
        for (int64_t i = 0; i < perSlice; ++i)
          text << (i ? ", " : "") << "$" << mi * perSlice + i;
        // scale-d, scale-a, scale-b, [transpose-a,] transpose-b.
        text << "}, " << a << ", db, " << (zeroed && kk == 0 ? "z" : "p")
             << ", 1, 1, "
             << (aInRegisters      ? ""
                 : op.getAMMajor() ? "1, "
                                   : "0, ")
             << (op.getBKMajor() ? 0 : 1) << ";\n";
      }
    }
    text << "wgmma.commit_group.sync.aligned;\n";
    if (!op.getAsync())
      text << "wgmma.wait_group.sync.aligned 0;\n";
    text << "}";

    SmallVector<Type> fields(outputs, rewriter.getF32Type());
    auto asmOp =
        createAsm(rewriter, loc, fields, operands, asmText, constraints);
    SmallVector<Value> results;
    for (int64_t o = 0; o < outputs; ++o)
      results.push_back(LLVM::ExtractValueOp::create(
          rewriter, loc, asmOp.getResult(0), ArrayRef<int64_t>{o}));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(
        op, op.getResult().getType(), results);
    return success();
  }
};

/// wgmma.wait_group as an asm block whose outputs are tied to its inputs
/// (every value of every operand): the values the MMAs were writing (or
/// reading) are defined, for LLVM, only once the wait is done.
struct LowerWarpgroupMmaWait : OpRewritePattern<WarpgroupMmaWaitOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WarpgroupMmaWaitOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> operands;
    SmallVector<Type> fields;
    std::string constraints;
    llvm::raw_string_ostream cons(constraints);
    for (Value vector : op.getValues()) {
      auto type = cast<VectorType>(vector.getType());
      for (int64_t i = 0; i < type.getNumElements(); ++i) {
        operands.push_back(vector::ExtractOp::create(rewriter, loc, vector,
                                                     ArrayRef<int64_t>{i}));
        fields.push_back(type.getElementType());
      }
    }
    for (auto [i, type] : llvm::enumerate(fields))
      cons << (i ? "," : "") << "=" << (type.isF32() ? 'f' : 'r');
    for (size_t i = 0; i < fields.size(); ++i)
      cons << "," << i;
    cons << ",~{memory}";
    std::string asmText = llvm::formatv(
        "wgmma.wait_group.sync.aligned {0};", op.getPending());
    auto asmOp =
        createAsm(rewriter, loc, fields, operands, asmText, constraints);
    SmallVector<Value> results;
    int64_t field = 0;
    for (Value vector : op.getValues()) {
      auto type = cast<VectorType>(vector.getType());
      SmallVector<Value> elements;
      for (int64_t i = 0; i < type.getNumElements(); ++i)
        elements.push_back(LLVM::ExtractValueOp::create(
            rewriter, loc, asmOp.getResult(0), ArrayRef<int64_t>{field++}));
      results.push_back(
          vector::FromElementsOp::create(rewriter, loc, type, elements));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// The address of `memref[indices]` (4-byte elements) from the memref's
/// metadata, as i64: a generic address for a global memref, the offset in
/// the shared window for a workgroup one.
static Value elementAddress(PatternRewriter &rewriter, Location loc,
                            Value memref, ValueRange indices,
                            bool unitInnermost = false) {
  auto meta = memref::ExtractStridedMetadataOp::create(rewriter, loc, memref);
  Value element = meta.getOffset();
  for (auto [i, index, stride] : llvm::enumerate(indices, meta.getStrides())) {
    bool unit = unitInnermost && i + 1 == indices.size();
    element = arith::AddIOp::create(
        rewriter, loc, element,
        unit ? index : arith::MulIOp::create(rewriter, loc, index, stride));
  }
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, memref);
  Value address = arith::AddIOp::create(
      rewriter, loc, base,
      arith::MulIOp::create(rewriter, loc, element,
                            arith::ConstantIndexOp::create(rewriter, loc, 4)));
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                    address);
}

/// A side-effecting asm statement without results.
static void createAsmStatement(PatternRewriter &rewriter, Location loc,
                               ValueRange operands, StringRef text,
                               StringRef constraints) {
  LLVM::InlineAsmOp::create(rewriter, loc, /*res=*/Type(), operands, text,
                            constraints,
                            /*has_side_effects=*/true, /*is_align_stack=*/false,
                            LLVM::TailCallKind::None,
                            LLVM::AsmDialectAttr::get(rewriter.getContext(),
                                                      LLVM::AsmDialect::AD_ATT),
                            /*operand_attrs=*/ArrayAttr());
}

/// `index` as a sum of constants and the rest: the constants' total, and the
/// other terms added up again (null when there are none). New adds only where
/// a constant was taken out of a sum.
static std::pair<Value, int64_t> splitConstant(PatternRewriter &rewriter,
                                               Location loc, Value index) {
  if (std::optional<int64_t> constant = getConstantIntValue(index))
    return {Value(), *constant};
  auto add = index.getDefiningOp<arith::AddIOp>();
  if (!add)
    return {index, 0};
  auto [lhs, lhsConstant] = splitConstant(rewriter, loc, add.getLhs());
  auto [rhs, rhsConstant] = splitConstant(rewriter, loc, add.getRhs());
  if (!lhsConstant && !rhsConstant)
    return {index, 0};
  Value rest = !lhs   ? rhs
               : !rhs ? lhs
                      : arith::AddIOp::create(rewriter, loc, lhs, rhs);
  return {rest, lhsConstant + rhsConstant};
}

/// The element's address from the memref's metadata, made a global one
/// (the buffer is a kernel argument; with a generic address ptxas emits a
/// shared-memory CAS loop beside the reduction, measured 2x slower), then
/// one `red.relaxed.gpu.global.add.f32` per element (a vector's at
/// immediate offsets), or one vector reduction where the target has them.
/// A vector's innermost dimension has unit stride (the op's contract), so
/// the constant terms of a vector's innermost index become the immediate
/// offset: the reductions of one row, 8 columns apart, then share one
/// address register instead of computing one each (the sm_90a atomic
/// backward: 4 integer instructions and a register pair less per reduction,
/// so D = 64 takes TMA rows without spilling, docs/GPU-NOTES.md 70; on
/// sm_80, with the fragment addresses no longer hoisted, causal D = 128
/// takes 64 query rows per step without spills, docs/GPU-NOTES.md 90).
struct LowerReduceAdd : OpRewritePattern<ReduceAddOp> {
  LowerReduceAdd(MLIRContext *ctx, bool vectorReductions)
      : OpRewritePattern(ctx), vectorReductions(vectorReductions) {}
  bool vectorReductions;

  LogicalResult matchAndRewrite(ReduceAddOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto vector = dyn_cast<VectorType>(op.getValue().getType());
    int64_t width = vector ? vector.getNumElements() : 1;
    bool oneVector = vectorReductions && width > 1;
    SmallVector<Value> indices(op.getIndices());
    int64_t offset = 0;
    // A vector's innermost stride is 1 by the op's contract; a scalar's
    // where the destination's type says so.
    bool unitInnermost =
        vector ||
        cast<MemRefType>(op.getDest().getType()).isLastDimUnitStride();
    if (unitInnermost && !indices.empty()) {
      auto [rest, constant] = splitConstant(rewriter, loc, indices.back());
      indices.back() =
          rest ? rest : arith::ConstantIndexOp::create(rewriter, loc, 0);
      offset = 4 * constant;
    }
    SmallVector<Value> operands = {
        elementAddress(rewriter, loc, op.getDest(), indices, unitInnermost)};
    std::string text = "{ .reg .u64 %g; cvta.to.global.u64 %g, $0; ";
    std::string constraints = "l";
    if (oneVector)
      text += llvm::formatv("red.relaxed.gpu.global.add.v{0}.f32 [%g{1}], {{",
                            width,
                            offset ? llvm::formatv("+{0}", offset).str() : "")
                  .str();
    for (int64_t i = 0; i < width; ++i) {
      operands.push_back(
          vector ? vector::ExtractOp::create(rewriter, loc, op.getValue(),
                                             ArrayRef<int64_t>{i})
                       .getResult()
                 : op.getValue());
      text +=
          oneVector
              ? llvm::formatv("{0}${1}", i ? ", " : "", i + 1).str()
              : llvm::formatv("red.relaxed.gpu.global.add.f32 [%g+{0}], ${1}; ",
                              offset + 4 * i, i + 1)
                    .str();
      constraints += ",f";
    }
    if (oneVector)
      text += "}; ";
    text += "}";
    constraints += ",~{memory}";
    createAsmStatement(rewriter, loc, operands, text, constraints);
    rewriter.eraseOp(op);
    return success();
  }
};

/// The CTA's arrival in one asm block: the threads synchronise (the op's
/// barrier), thread 0 adds one to the counter with acquire-release
/// semantics at GPU scope (releasing the writes the barrier ordered before
/// it, acquiring the earlier arrivals') and, the count-th, puts it back to
/// 0; `bar.red.or` gives its verdict to every thread and orders their later
/// loads after the acquire. Per-thread `fence.acq_rel.gpu` before and after
/// (the threadfence-reduction form) cost the last CTA ~1 us at B = 1
/// (docs/GPU-NOTES.md 86). (NVVM's barrier op reduces only on barrier 0.)
/// The counter's address is generic.
struct LowerLastArrival : OpRewritePattern<LastArrivalOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LastArrivalOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    std::string barrier = "0";
    if (std::optional<uint32_t> id = op.getBarrierId())
      barrier = llvm::formatv("{0}, {1}", *id, *op.getBarrierThreads()).str();
    Value tid = arith::IndexCastOp::create(
        rewriter, loc, i32,
        gpu::ThreadIdOp::create(rewriter, loc, gpu::Dimension::x));
    Value count = arith::IndexCastOp::create(rewriter, loc, i32, op.getCount());
    Value address =
        elementAddress(rewriter, loc, op.getCounter(), op.getIndices());
    std::string text =
        llvm::formatv(
            "{{ .reg .pred %leader, %won, %any; .reg .u32 %old, %before; "
            "bar.sync {0}; "
            "setp.eq.u32 %leader, $1, 0; mov.u32 %old, 0; "
            "sub.u32 %before, $3, 1; "
            "@%leader atom.acq_rel.gpu.add.u32 %old, [$2], 1; "
            "setp.eq.and.u32 %won, %old, %before, %leader; "
            "@%won st.relaxed.gpu.u32 [$2], 0; "
            "bar.red.or.pred %any, {0}, %won; "
            "selp.u32 $0, 1, 0, %any; }",
            barrier)
            .str();
    Value any = createAsm(rewriter, loc, {i32}, {tid, address, count}, text,
                          "=r,r,l,r,~{memory}")
                    .getResult(0);
    any = LLVM::ExtractValueOp::create(rewriter, loc, any, 0);
    rewriter.replaceOp(
        op, arith::CmpIOp::create(
                rewriter, loc, arith::CmpIPredicate::ne, any,
                arith::ConstantOp::create(rewriter, loc, i32,
                                          rewriter.getI32IntegerAttr(0))));
    return success();
  }
};

/// The value through `mov.b64`, which LLVM cannot look through.
struct LowerPerIteration : OpRewritePattern<PerIterationOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(PerIterationOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i64 = rewriter.getI64Type();
    Value wide =
        arith::IndexCastUIOp::create(rewriter, loc, i64, op.getValue());
    Value copy = LLVM::ExtractValueOp::create(
        rewriter, loc,
        createAsm(rewriter, loc, {i64}, {wide}, "mov.b64 $0, $1;", "=l,l")
            .getResult(0),
        0);
    rewriter.replaceOpWithNewOp<arith::IndexCastUIOp>(
        op, rewriter.getIndexType(), copy);
    return success();
  }
};

struct LowerExit : OpRewritePattern<ExitOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ExitOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(
        op, rewriter.getStringAttr("llvm.nvvm.exit"), ValueRange{});
    return success();
  }
};

struct ConvertFlashGPUToLLVMPass
    : flash::impl::ConvertFlashGPUToLLVMPassBase<ConvertFlashGPUToLLVMPass> {
  using Base::Base;
  void runOnOperation() override {
    // One walk, no folding: the IR around the ops stays as it was.
    RewritePatternSet patterns(&getContext());
    flash::populateFlashGPUToLLVMPatterns(patterns, vectorReductions);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::flash::populateFlashGPUToLLVMPatterns(RewritePatternSet &patterns,
                                                 bool vectorReductions) {
  patterns.add<LowerWarpgroupMma, LowerWarpgroupMmaWait>(patterns.getContext());
  patterns.add<LowerReduceAdd>(patterns.getContext(), vectorReductions);
  patterns.add<LowerLastArrival>(patterns.getContext());
  patterns.add<LowerPerIteration, LowerExit>(patterns.getContext());
}
