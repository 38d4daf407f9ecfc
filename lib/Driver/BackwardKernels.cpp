//===- BackwardKernels.cpp - flash.attention_backward -> kernels -*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
// One backward op: tiled into the dQ and dK/dV nests, both lowered through
// --flash-gpu-pipeline into one module with two launches, each assembled by
// ptxas; the dK/dV steps get narrower until ptxas reports no spill.
//
//===----------------------------------------------------------------------===//

#include "flash/Driver/Driver.h"

#include "KernelABI.h"
#include "KernelLaunch.h"
#include "KernelOutput.h"

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"
#include "flash/Pipelines/Pipelines.h"
#include "flash/Target/AttentionTarget.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::driver;
namespace json = llvm::json;

namespace {
/// The two launches of the backward `op` through the kernel pipeline and
/// down to PTX, with the manifest's parameters (the workspace included).
struct BuiltBackward {
  SmallVector<Param> params;
  SmallVector<Launch> launches;
  bool alignedRows = false;
  /// The dQ accumulator's rows are a multiple of this (16 where it is
  /// fragment-major, flash.atomic_add's strips).
  int64_t accumulatorRowMultiple = 1;
};

/// With `tooLarge`, tiles over the chip's shared memory set it and fail
/// without a diagnostic (a search's try); else they are the pipeline's error.
FailureOr<BuiltBackward> buildBackward(AttentionBackwardOp op, StringRef name,
                                       bool asyncCopies, int64_t kvBlockCols,
                                       bool specialize,
                                       const KernelCompileOptions &compile,
                                       bool *tooLarge = nullptr) {
  MLIRContext *ctx = op.getContext();
  BuiltBackward built;
  OwningOpRef<ModuleOp> module =
      buildBackwardKernelModule(op, name, built.params);
  // Tiled first with this choice of dK/dV steps; the pipeline's own tiling
  // then finds nothing left to tile.
  PassManager tiling(ctx);
  FlashTileAttentionPassOptions tileOptions;
  tileOptions.target = tileTargetOf(compile.chip);
  tileOptions.blockRows = compile.blockRows;
  tileOptions.blockCols = compile.blockCols;
  tileOptions.kvBlockRows = compile.kvBlockRows;
  tileOptions.kvBlockCols = kvBlockCols;
  tileOptions.deterministic = compile.deterministic;
  bool overlap = compile.overlapProducts && !compile.deterministic &&
                 compile.chip == Chip::Sm90a &&
                 tensorCoreChoice(compile) == TensorCores::Wgmma;
  tileOptions.overlapProducts = overlap;
  tileOptions.dqFragmentMajor =
      dqFragmentMajorChoice(compile, op.getQuery().getType().getShape().back());
  tileOptions.maskFreeBlocks = compile.maskFreeBlocks;
  tileOptions.maskUnderBranch = compile.maskUnderBranch;

  tiling.addPass(createFlashTileAttentionPass(tileOptions));
  if (failed(tiling.run(*module)))
    return op.emitError("flash-compile: tiling the backward failed");
  module->walk([&](AtomicAddOp add) {
    if (add.getFragmentMajor())
      built.accumulatorRowMultiple = kFragmentStripRows;
  });

  FlashGpuPipelineOptions options;
  options.chip = compile.chip;
  options.format = BinaryFormat::Isa;
  options.blockRows = compile.blockRows;
  options.blockCols = compile.blockCols;
  options.threads = compile.threadsPerBlock ? compile.threadsPerBlock : 128;
  options.tensorCores = tensorCoreChoice(compile);
  options.asyncCopies = asyncCopies;
  options.loadStages = loadStagesChoice(compile, /*backward=*/true);
  options.tmaLoads = compile.tmaLoads && compile.chip == Chip::Sm90a;
  options.deterministic = compile.deterministic;
  options.stagedReductions =
      compile.stagedReductions && compile.chip == Chip::Sm90a;
  options.perIterationLanes = compile.perIterationLanes;
  options.swizzleLdmatrix = compile.swizzleLdmatrix;
  options.exitEmptyTiles = compile.exitEmptyTiles;
  options.tmaRowVectors = compile.tmaRowVectors;
  options.raggedTma = compile.raggedTma;
  options.asyncMma = overlap;
  options.warpSpecialize =
      specialize && options.tmaLoads && options.loadStages >= 2;
  KernelBuild result = runKernelPipeline(*module, options, bool(tooLarge));
  if (result == KernelBuild::TooLarge) {
    *tooLarge = true;
    return failure();
  }
  if (result != KernelBuild::Built)
    return op.emitError("flash-compile: building the backward kernels failed");
  // Workspace arguments the pipeline appended, for the manifest.
  auto func = *module->getOps<func::FuncOp>().begin();
  for (unsigned i = built.params.size(); i < func.getNumArguments(); ++i) {
    if (func.getArgAttr(i, kTensorMapsAttr))
      continue; // described by describeLaunches
    auto tag = func.getArgAttrOfType<StringAttr>(i, kWorkspaceAttr);
    auto type = dyn_cast<MemRefType>(func.getArgument(i).getType());
    if (!tag || !type)
      return op.emitError("flash-compile: an unexpected kernel argument");
    if (tag.getValue() != "d" && tag.getValue() != "dq_accum")
      return op.emitError("flash-compile: a workspace the runtime cannot "
                          "shape: ")
             << tag;
    built.params.push_back(
        {tag.getValue().str(),
         RankedTensorType::get(type.getShape(), type.getElementType())});
  }

  FailureOr<SmallVector<Launch>> launches =
      describeLaunches(op, *module, built.params, /*describeGrid=*/true,
                       /*abi=*/false);
  built.alignedRows = requiresAlignedRows(*module);
  bool sharedPointers32 =
      compile.sharedPointers32 && compile.chip == Chip::Sm90a;
  if (failed(launches) ||
      failed(lowerToPtx(op, *module, options, *launches, sharedPointers32)))
    return failure();
  built.launches = std::move(*launches);
  return built;
}

/// The manifest's `workspace`: the parameters the tiler made of its
/// workspaces (buildBackward admits these two only), each shaped like the
/// tensor whose rows it follows (D: the LSE; the dQ sums: Q), f32.
json::Array workspaceList(const BuiltBackward &built) {
  json::Array list;
  for (const Param &p : built.params) {
    StringRef like = p.name == "d" ? "lse" : p.name == "dq_accum" ? "q" : "";
    if (like.empty())
      continue;
    json::Object entry{{"name", p.name}, {"like", like}, {"dtype", "f32"}};
    // Rows (dimension 2 of Q's [B, Hq, M, D]) rounded up to whole strips.
    if (p.name == "dq_accum" && built.accumulatorRowMultiple > 1)
      entry["row_multiple"] = built.accumulatorRowMultiple;
    list.push_back(std::move(entry));
  }
  return list;
}

/// Compiles the backward `op` into DIR/<name>.json and one PTX (and cubin)
/// per launch: the dQ kernel (which also writes D) and the dK/dV kernel.
/// With `asyncCopies` the kernels need aligned rows and the manifest names
/// `general` for other inputs. With `specialize` (two stages by TMA) each
/// launch takes the form with a producer warpgroup where ptxas assembles
/// it without spills, and the other form elsewhere (the dQ kernel's loop is
/// 2-5% faster so; the dK/dV kernel spills at two CTAs per SM:
/// docs/GPU-NOTES.md 51). `spills`: the bytes both launches spill;
/// `queryLaunchSpills`, if given, the dQ launch's. With `tooLarge`, tiles
/// over the chip's shared memory set it and write nothing.
LogicalResult compileBackward(AttentionBackwardOp op, StringRef name,
                              StringRef outputDir, bool asyncCopies,
                              StringRef general, int64_t kvBlockCols,
                              bool specialize, int64_t &spills,
                              const KernelCompileOptions &compile,
                              int64_t *queryLaunchSpills = nullptr,
                              bool *tooLarge = nullptr) {
  KernelCompileOptions hoisted = compile;
  hoisted.perIterationLanes = false;
  FailureOr<BuiltBackward> plain =
      buildBackward(op, name, asyncCopies, kvBlockCols, /*specialize=*/false,
                    hoisted, tooLarge);
  if (tooLarge && *tooLarge)
    return success();
  if (failed(plain))
    return failure();
  // Built where a launch of the plain form spills.
  std::optional<BuiltBackward> laned;
  std::optional<BuiltBackward> specialized;
  if (specialize) {
    FailureOr<BuiltBackward> built = buildBackward(
        op, name, asyncCopies, kvBlockCols, /*specialize=*/true, compile);
    if (failed(built))
      return failure();
    // Both forms read the same parameters; a launch of either may be taken.
    if (built->launches.size() == plain->launches.size())
      specialized = std::move(*built);
  }
  json::Array launchList;
  int64_t maxRegisters = 0, spillBytes = 0;
  for (auto [i, plainLaunch] : llvm::enumerate(plain->launches)) {
    std::string base = (name + "." + std::to_string(i)).str();
    std::string ptxPath = kernelPath(outputDir, base, ".ptx");
    Launch *l = &plainLaunch;
    FailureOr<PtxasReport> assembled = failure();
    // A launch the ring could not take has the plain form's block.
    if (specialized && !(specialized->launches[i].block == plainLaunch.block)) {
      l = &specialized->launches[i];
      assembled = writeKernel(op, l->ptx, outputDir, base, compile);
      if (failed(assembled))
        return failure();
      if (assembled->spillBytes > 0) {
        if (compile.log)
          *compile.log << name << " launch " << i << ": spills "
                       << assembled->spillBytes
                       << " bytes with a producer warpgroup\n";
        l = &plainLaunch;
        assembled = failure();
      }
    }
    if (failed(assembled))
      assembled = writeKernel(op, l->ptx, outputDir, base, compile);
    if (failed(assembled))
      return failure();
    // Where the launch spills with its lanes' fragment and copy addresses
    // hoisted out of the loops, the same launch with them rebuilt in each
    // iteration, if that spills less (docs/GPU-NOTES.md 90). Only there:
    // where the hoisted form fits, it was as fast or faster (the sm_80
    // deterministic D = 64 dK/dV launch 1.15x).
    if (assembled->spillBytes > 0 && l == &plainLaunch &&
        compile.perIterationLanes) {
      if (!laned) {
        FailureOr<BuiltBackward> built = buildBackward(
            op, name, asyncCopies, kvBlockCols, /*specialize=*/false, compile);
        if (failed(built))
          return failure();
        laned = std::move(*built);
      }
      if (laned->launches.size() == plain->launches.size() &&
          laned->launches[i].block == plainLaunch.block &&
          laned->launches[i].sharedMemory == plainLaunch.sharedMemory) {
        FailureOr<PtxasReport> again =
            writeKernel(op, laned->launches[i].ptx, outputDir, base, compile);
        if (failed(again))
          return failure();
        if (again->spillBytes < assembled->spillBytes) {
          if (compile.log)
            *compile.log << name << " launch " << i << ": spills "
                         << assembled->spillBytes
                         << " bytes with hoisted lane addresses; "
                         << again->spillBytes << " with per-iteration lanes\n";
          l = &laned->launches[i];
          assembled = again;
        } else {
          assembled = writeKernel(op, l->ptx, outputDir, base, compile);
          if (failed(assembled))
            return failure();
        }
      }
    }
    PtxasReport &report = *assembled;
    maxRegisters = std::max(maxRegisters, report.registers);
    spillBytes += std::max<int64_t>(report.spillBytes, 0);
    if (i == 0 && queryLaunchSpills)
      *queryLaunchSpills = std::max<int64_t>(report.spillBytes, 0);
    launchList.push_back(json::Object{
        {"entry", l->entry},
        {"ptx", base + ".ptx"},
        {"cubin", report.wroteCubin ? json::Value(base + ".cubin")
                                    : json::Value(nullptr)},
        {"params", std::move(l->params)},
        {"grid", std::move(l->grid)},
        {"block", std::move(l->block)},
        {"dynamic_shared_memory_bytes", l->sharedMemory},
        {"mapping", l->registerTiles ? "warp-registers" : "shared-tiles"},
        {"mma", l->wgmma ? "wgmma" : "mma.sync"},
        {"registers", report.registers},
        {"spill_bytes", report.spillBytes}});
    if (compile.log)
      *compile.log << name << " launch " << i << " (" << l->entry
                   << "): " << ptxPath << ", registers " << report.registers
                   << ", spill bytes " << report.spillBytes
                   << ", shared memory " << l->sharedMemory << " B"
                   << (l->registerTiles ? ", warp registers" : "")
                   << (l->wgmma ? ", wgmma" : "")
                   << (specialized && l == &specialized->launches[i]
                           ? ", producer warpgroup"
                           : "")
                   << (laned && l == &laned->launches[i]
                           ? ", per-iteration lanes"
                           : "")
                   << "\n";
  }
  json::Object manifest{
      {"kernel", name},
      {"kind", "backward"},
      {"chip", stringifyChip(compile.chip)},
      {"launches", std::move(launchList)},
      // Parameters the caller does not pass: allocated by the runtime.
      {"workspace", workspaceList(*plain)},
      {"deterministic", compile.deterministic},
      {"registers", maxRegisters},
      {"spill_bytes", spillBytes},
  };
  if (op.isVarlen())
    // Packed sequences: each launch's grid counts blocks of the caller's
    // bounds on a sequence's rows (max_seqlen_q, max_seqlen_k).
    manifest["grid_scalars"] = json::Array{"max_seqlen_q", "max_seqlen_k"};
  describeAttention(manifest, op);
  manifest["kv_block_cols"] =
      kvBlockCols ? json::Value(kvBlockCols) : json::Value("target");
  spills = spillBytes;
  return writeManifest(kernelPath(outputDir, name, ".json"),
                       std::move(manifest), general, plain->alignedRows);
}

/// The backward of `op` (and its general pair): the dK/dV nest's query
/// columns from the target's choice, then narrower ones until ptxas needs
/// no spill (D = 128: 32 columns spill 36 bytes in the cp.async kernel).
LogicalResult compileBackwardPair(AttentionBackwardOp op, StringRef name,
                                  StringRef outputDir, bool asyncCopies,
                                  StringRef general,
                                  const KernelCompileOptions &compile) {
  int64_t d = std::max(op.getQuery().getType().getShape().back(),
                       op.getValue().getType().getShape().back());
  // dK/dV steps of the target's default width (0), narrower when that
  // spills; with wgmma first twice the default: 64 query rows per step at
  // D = 128 (measured 1.13x), 128 at D = 64 (1.07x causal),
  // docs/GPU-NOTES.md 30 and 33.
  SmallVector<int64_t> candidates = {compile.kvBlockCols};
  if (!compile.kvBlockCols && !compile.blockRows) {
    if (tensorCoreChoice(compile) == TensorCores::Wgmma && asyncCopies)
      candidates.insert(candidates.begin(), d > 64 ? 64 : 128);
    if (d > 64)
      candidates.push_back(16);
  }
  // On sm_90a with TMA loads, first two stages at the widest steps: with
  // TMA's registers back both kernels fit them without spills at D = 128
  // (fwd+bwd 1.10-1.18x of one stage on cp.async, docs/GPU-NOTES.md 47),
  // each launch with a producer warpgroup where that fits too
  // (docs/GPU-NOTES.md 51); where they spill, one stage and the search
  // below.
  if (compile.deterministic && !compile.loadStages &&
      compile.chip == Chip::Sm90a && compile.tmaLoads && asyncCopies &&
      tensorCoreChoice(compile) == TensorCores::Wgmma) {
    KernelCompileOptions twoStages = compile;
    twoStages.loadStages = 2;
    // The producer warpgroup pays at D = 128 (backward 1.02-1.05x) and not
    // at D = 64 (1.00x alone, 0.94-1.00x with the forward before it).
    bool specialize = compile.warpSpecialize && d > 64 && compile.deterministic;
    int64_t spills = 0;
    if (failed(compileBackward(op, name, outputDir, asyncCopies, general,
                               candidates.front(), specialize, spills,
                               twoStages)))
      return failure();
    if (spills == 0)
      return success();
    if (compile.log)
      *compile.log << name << ": spills " << spills
                   << " bytes with two stages; one stage\n";
  }
  // FlashAttention-2's own backward: 128 keys per CTA on eight warps (half
  // the dQ reductions of 64 keys; 1.2-1.4x on mma.sync, docs/GPU-NOTES.md
  // 55), 64 query rows per step where that assembles without spills, else
  // 32; where both spill, the search below. With wgmma (two warpgroups, dS
  // K on warpgroup MMA too, docs/GPU-NOTES.md 57) 128 query rows first at
  // D = 64, so that each warpgroup takes one 64-row slice of dQ.
  if (!compile.deterministic && !compile.kvBlockRows && !compile.kvBlockCols &&
      !compile.blockRows && !compile.threadsPerBlock) {
    KernelCompileOptions wide = compile;
    wide.kvBlockRows = 128;
    wide.threadsPerBlock = 256;
    SmallVector<int64_t> widths = {64, 32};
    if (tensorCoreChoice(compile) == TensorCores::Wgmma) {
      if (d <= 64)
        widths.insert(widths.begin(), 128);
      // Two stages of Q and dO where TMA-era kernels have the room.
      if (!compile.loadStages && compile.chip == Chip::Sm90a)
        wide.loadStages = 2;
    }
    // With TMA the LSE and D rows come with Q and dO (1.23-1.35x at
    // D = 128, docs/GPU-NOTES.md 63); where their registers make the step
    // spill (D = 64 at 128 rows), the same step with element copies first.
    bool tmaRowsOrNot =
        asyncCopies && wide.tmaLoads && compile.chip == Chip::Sm90a;
    // On sm_80 two copies of Q and dO first at each width (FlashAttention-2's
    // double buffer: the dK/dV launch 1.10-1.13x faster than one copy,
    // docs/GPU-NOTES.md 90), then one.
    bool twoCopiesOrOne = !compile.loadStages && compile.chip == Chip::Sm80 &&
                          asyncCopies &&
                          tensorCoreChoice(compile) != TensorCores::Wgmma;
    struct Try {
      int64_t cols;
      bool tmaRows;
      int64_t loadStages;
    };
    // How each step keeps the per-element mask off the blocks that need
    // none, in the order tried; the first that assembles without spills is
    // taken (one masked loop last, which has the fewest registers).
    // Measured (dK/dV launch, H100, docs/GPU-NOTES.md 98): on sm_90a the
    // mask under a branch is 1.02-1.03x one masked loop, and at D = 128
    // under a causal mask 1.10x loops of their own (which fit at 255
    // registers), but at D = 64 loops of their own are 1.10x the branch.
    // On sm_80 the branch is 1.02-1.04x one masked loop under a causal mask
    // and 0.96x without one (where it is never taken), so it is tried only
    // for ops with a causal mask or a window.
    SmallVector<MaskFreeBlocks> maskForms;
    bool maskedBlocks = op.getCausal() || op.getWindow();
    if (!compile.maskFreeBlocks)
      maskForms = {MaskFreeBlocks::None};
    else if (compile.maskUnderBranch)
      maskForms = {MaskFreeBlocks::Branch, MaskFreeBlocks::None};
    else if (tensorCoreChoice(compile) == TensorCores::Wgmma && d >= 128)
      maskForms = {MaskFreeBlocks::Branch, MaskFreeBlocks::Loops,
                   MaskFreeBlocks::None};
    else if (tensorCoreChoice(compile) == TensorCores::Wgmma || maskedBlocks)
      maskForms = {MaskFreeBlocks::Loops, MaskFreeBlocks::Branch,
                   MaskFreeBlocks::None};
    else
      maskForms = {MaskFreeBlocks::Loops, MaskFreeBlocks::None};
    auto describe = [](MaskFreeBlocks form) {
      switch (form) {
      case MaskFreeBlocks::Loops:
        return "mask-free blocks in loops of their own";
      case MaskFreeBlocks::Branch:
        return "the mask under a branch";
      case MaskFreeBlocks::None:
        return "one masked loop";
      }
      llvm_unreachable("unknown mask form");
    };
    // Mask-free blocks are taken only with the lanes' addresses hoisted:
    // rebuilt per iteration they measured 0.93-1.00x of one masked loop
    // (sm_80 D = 64, docs/GPU-NOTES.md 93).
    auto compileStep = [&](KernelCompileOptions step, int64_t cols,
                           int64_t &spills,
                           bool *tooLarge = nullptr) -> LogicalResult {
      for (auto [i, form] : llvm::enumerate(maskForms)) {
        step.maskFreeBlocks = form != MaskFreeBlocks::None;
        step.maskUnderBranch = form == MaskFreeBlocks::Branch;
        KernelCompileOptions hoisted = step;
        hoisted.perIterationLanes =
            !step.maskFreeBlocks && step.perIterationLanes;
        if (failed(compileBackward(op, name, outputDir, asyncCopies, general,
                                   cols, /*specialize=*/false, spills, hoisted,
                                   /*queryLaunchSpills=*/nullptr, tooLarge)))
          return failure();
        if (spills == 0 || (tooLarge && *tooLarge) || i + 1 == maskForms.size())
          return success();
        if (compile.log)
          *compile.log << name << ": spills " << spills << " bytes with "
                       << describe(form) << "; " << describe(maskForms[i + 1])
                       << "\n";
      }
      return success();
    };
    SmallVector<Try> tries;
    for (int64_t cols : widths) {
      if (twoCopiesOrOne)
        tries.push_back({cols, true, 2});
      tries.push_back({cols, true, wide.loadStages});
      if (tmaRowsOrNot)
        tries.push_back({cols, false, wide.loadStages});
    }
    // The widest step first with its products overlapped (dPᵀ beside Sᵀ,
    // waited for at first use: 1.03-1.05x at D = 128, docs/GPU-NOTES.md 72),
    // which holds both score tiles at once; where that spills, the tries
    // below keep the sequential order.
    if (wide.overlapProducts && wide.chip == Chip::Sm90a &&
        tensorCoreChoice(compile) == TensorCores::Wgmma) {
      KernelCompileOptions step = wide;
      step.tmaRowVectors = tries.front().tmaRows;
      int64_t spills = 0;
      if (failed(compileStep(step, tries.front().cols, spills)))
        return failure();
      if (spills == 0) {
        if (compile.log)
          *compile.log << name << ": dK/dV products overlapped\n";
        return success();
      }
      if (compile.log)
        *compile.log << name << ": spills " << spills
                     << " bytes with the products overlapped\n";
    }
    wide.overlapProducts = false;
    for (const Try &t : tries) {
      KernelCompileOptions step = wide;
      step.tmaRowVectors = t.tmaRows;
      step.loadStages = t.loadStages;
      int64_t spills = 0;
      bool tooLarge = false;
      if (failed(compileStep(step, t.cols, spills, &tooLarge)))
        return failure();
      if (tooLarge) {
        // D = 256 on sm_80: 128 keys' tiles exceed the CTA's shared memory.
        if (compile.log)
          *compile.log << name << ": 128 keys and " << t.cols
                       << " query rows per step"
                       << (twoCopiesOrOne && t.loadStages == 2
                               ? " (two copies of Q and dO)"
                               : "")
                       << " exceed the shared memory\n";
        continue;
      }
      if (spills == 0)
        return success();
      if (compile.log)
        *compile.log << name << ": spills " << spills << " bytes with 128 keys"
                     << " and " << t.cols << " query rows per step"
                     << (tmaRowsOrNot && t.tmaRows ? " (LSE and D by TMA)" : "")
                     << (twoCopiesOrOne && t.loadStages == 2
                             ? " (two copies of Q and dO)"
                             : "")
                     << "\n";
    }
  }
  KernelCompileOptions sequential = compile;
  sequential.overlapProducts = false;
  // Where the dQ launch spills (narrower dK/dV steps do not change it),
  // the same kernels with half as many keys per dQ step, the dK/dV nest's
  // tiles kept as they were (the softcap varlen backward's general kernel:
  // 20 bytes at 64 keys, none at 32).
  bool dqTilesFree =
      !compile.blockRows && !compile.blockCols && !compile.kvBlockRows;
  BackwardTiles chosen = chooseBackwardTiles(
      getAttentionTarget(tileTargetOf(compile.chip)),
      op.getQuery().getType().getShape().back(),
      op.getValue().getType().getShape().back(),
      op.getQuery().getType().getElementType().getIntOrFloatBitWidth() / 8);
  for (auto [i, cols] : llvm::enumerate(candidates)) {
    int64_t spills = 0, querySpills = 0;
    if (failed(compileBackward(op, name, outputDir, asyncCopies, general, cols,
                               /*specialize=*/false, spills, sequential,
                               &querySpills)))
      return failure();
    if (spills == 0)
      return success();
    if (querySpills > 0 && dqTilesFree && chosen.blockCols > 16) {
      KernelCompileOptions narrow = sequential;
      narrow.blockCols = chosen.blockCols / 2;
      narrow.kvBlockRows = chosen.kvRows;
      if (compile.log)
        *compile.log << name << ": the dQ launch spills " << querySpills
                     << " bytes; " << narrow.blockCols << " keys per dQ step\n";
      if (failed(compileBackward(op, name, outputDir, asyncCopies, general,
                                 cols, /*specialize=*/false, spills, narrow)))
        return failure();
      if (spills == 0)
        return success();
    }
    if (i + 1 < candidates.size() && compile.log)
      *compile.log << name << ": spills " << spills
                   << " bytes; narrower dK/dV steps\n";
  }
  return success();
}

} // namespace

LogicalResult
flash::compileAttentionBackwardKernels(AttentionBackwardOp op, StringRef name,
                                       StringRef outputDir,
                                       const KernelCompileOptions &compile) {
  // As for the forward: cp.async kernels for aligned rows, and a general
  // pair (element copies) for any strides.
  std::string general = (name + "_general").str();
  if (failed(compileBackwardPair(op, name, outputDir, /*asyncCopies=*/true,
                                 general, compile)))
    return failure();
  return compileBackwardPair(op, general, outputDir, /*asyncCopies=*/false, "",
                             compile);
}
