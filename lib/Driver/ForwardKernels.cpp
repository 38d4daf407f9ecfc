//===- ForwardKernels.cpp - flash.attention -> kernels ----------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// One forward op: its kernel module through --flash-gpu-pipeline with each
// candidate tile configuration in turn, the first that fits the chip's
// shared memory and that ptxas assembles without spilling written out.
//
//===----------------------------------------------------------------------===//

#include "flash/Driver/Driver.h"

#include "KernelABI.h"
#include "KernelLaunch.h"
#include "KernelOutput.h"

#include "flash/Dialect/Flash/IR/TileRoles.h"
#include "flash/Pipelines/Pipelines.h"
#include "flash/Target/AttentionTarget.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::driver;
namespace json = llvm::json;

namespace {
struct Config {
  int64_t rows, cols, threads;
  /// Worth it only when the contractions take wgmma.
  bool wgmmaOnly = false;
  /// A producer warpgroup issues the TMA copies for `threads` consumers (the
  /// block has 128 more threads); worth it only when the kernel came out
  /// that way (every key-block tile by TMA).
  bool warpSpecialized = false;
  /// mma.sync kernels: the accumulator's rescale behind a warp vote (fewer
  /// registers) rather than every key block (faster where it fits: GPU-NOTES
  /// 60).
  bool lazyRescale = true;
  /// Warpgroup MMAs narrowed to a ragged key block's keys (docs/Rationale.md;
  /// the branch costs registers: tried first, then without).
  bool raggedKeys = true;
  /// mma.sync kernels: the lanes' ldmatrix and copy addresses rebuilt in
  /// each key-block iteration instead of hoisted out of the loops.
  bool perIterationLanes = false;
};

/// ptxas's most registers per thread.
constexpr int64_t kMaxRegisters = 255;

/// Whether forward kernels load K and V by TMA: sm_90a, unless the opt-in
/// overlap keeps the cp.async loads it was measured with (docs/GPU-NOTES.md
/// 42; TMA under it is not checked on a GPU yet).
bool forwardTmaLoads(const KernelCompileOptions &compile) {
  return compile.tmaLoads && compile.chip == Chip::Sm90a &&
         !compile.pipelineKeyLoops;
}

/// Whether `op`'s split-KV kernel merges its runs in the last run's CTA
/// (one launch): sm_90a's, where it was measured, but for packed sequences,
/// whose query blocks start at each sequence's offset (the tiler does not
/// mark their split nest, docs/Rationale.md).
bool mergesInLastCta(AttentionOp op, const KernelCompileOptions &compile) {
  return compile.keySplits && compile.mergeInLastCta &&
         compile.chip == Chip::Sm90a && !op.isVarlen();
}

/// The kernel of one tile configuration after the kernel pipeline.
struct Kernel {
  OwningOpRef<ModuleOp> module;
  /// The attention's launch; with key splits, then the merge's.
  SmallVector<Launch> launches;
  Launch &main() { return launches.front(); }
  const Launch &main() const { return launches.front(); }
  /// Tiles loaded with 16-byte cp.async: every tensor's rows must be
  /// contiguous and 16-byte aligned.
  bool requiresAlignedRows = false;
};

/// --flash-gpu-pipeline's options for `config`.
void setPipelineOptions(FlashGpuPipelineOptions &options, const Config &config,
                        bool asyncCopies, const KernelCompileOptions &compile) {
  options.chip = compile.chip;
  options.format = BinaryFormat::Isa;
  options.blockRows = config.rows;
  options.blockCols = config.cols;
  options.threads = config.threads;
  options.tensorCores = tensorCoreChoice(compile);
  options.asyncCopies = asyncCopies;
  options.loadStages = loadStagesChoice(compile, /*backward=*/false);
  options.pipelineKeyLoops = compile.pipelineKeyLoops;
  options.tmaLoads = forwardTmaLoads(compile);
  options.raggedTma = compile.raggedTma;
  options.warpSpecialize = options.tmaLoads && config.warpSpecialized;
  options.pingPong = options.warpSpecialize && compile.pingPong;
  options.persistent = options.warpSpecialize && compile.persistent;
  options.lazyRescale = config.lazyRescale;
  options.raggedKeys = config.raggedKeys;
  options.emulatedExp2Every = compile.emulatedExp2Every;
  options.swizzleLdmatrix = compile.swizzleLdmatrix;
  options.exitEmptyTiles = compile.exitEmptyTiles;
  options.perIterationLanes = config.perIterationLanes;
  // O 16 bytes per store (docs/GPU-NOTES.md 66). The backward keeps pairs:
  // the exchange's registers made its D = 64 dK/dV kernel spill.
  options.wideStores = true;
}

/// Builds the kernel of `op` with `config` up to its outlined launch; with
/// `tryingTiles`, nullopt when the tiles do not fit the chip's shared memory.
FailureOr<std::optional<Kernel>> build(AttentionOp op, StringRef name,
                                       const Config &config, bool asyncCopies,
                                       bool tryingTiles,
                                       const KernelCompileOptions &compile) {
  Kernel kernel;
  SmallVector<Param> params;
  kernel.module = buildKernelModule(op, name, params);
  if (compile.keySplits)
    addKeySplitParams(*kernel.module, op.getValue().getType().getShape().back(),
                      mergesInLastCta(op, compile), params);
  FlashGpuPipelineOptions options;
  setPipelineOptions(options, config, asyncCopies, compile);
  switch (runKernelPipeline(*kernel.module, options, tryingTiles)) {
  case KernelBuild::Built:
    break;
  case KernelBuild::TooLarge:
    return {std::nullopt};
  case KernelBuild::Failed:
    return op.emitError("flash-compile: building the kernel failed");
  }
  // The grid of one launch is the manifest's formula (query blocks, heads,
  // batch), so only the parameters, shared memory and mapping come from the
  // launch; the split-KV pair's grids come from the launches (the first's
  // query blocks times the splits).
  FailureOr<SmallVector<Launch>> launches =
      describeLaunches(op, *kernel.module, params,
                       /*describeGrid=*/compile.keySplits || op.isVarlen(),
                       /*abi=*/true);
  if (failed(launches))
    return failure();
  size_t expected = compile.keySplits && !mergesInLastCta(op, compile) ? 2 : 1;
  if (launches->size() != expected)
    return op.emitError("flash-compile: expected ")
           << expected << " kernels, got " << launches->size();
  kernel.launches = std::move(*launches);
  kernel.requiresAlignedRows = requiresAlignedRows(*kernel.module);
  return {std::move(kernel)};
}

/// Whether ptxas must spill `kernel`: with warp register tiles each lane
/// keeps its Br / warps x Dv / 32 share of the f32 accumulator live across
/// the key loop, and a thread has no more registers than the target's.
bool mustSpill(const Kernel &kernel, const Config &config, AttentionOp op,
               const KernelCompileOptions &compile) {
  if (!kernel.main().registerTiles)
    return false;
  int64_t valueDim = op.getValue().getType().getShape().back();
  int64_t accumulatorPerLane =
      config.rows / (config.threads / 32) * valueDim / 32;
  return accumulatorPerLane >
         getAttentionTarget(tileTargetOf(compile.chip)).registersPerThread;
}

/// What compileKernel wrote.
struct Written {
  /// Tiles loaded with cp.async or TMA: the runtime needs the general
  /// kernel for rows that are not 16-byte aligned.
  bool requiresAlignedRows = false;
  /// A warp-specialised kernel, and a persistent one (walking its tiles).
  bool warpSpecialized = false, persistent = false;
  /// Its tiles.
  int64_t rows = 0, cols = 0;
  /// Its manifest, which the caller completes and writes (writeManifest).
  json::Object manifest;
};

/// The split-KV pair's part of the manifest: both launches (the first
/// assembled as DIR/<name>.0 already, `first` its report; the merge written
/// and assembled here as DIR/<name>.1), the partial results the runtime
/// allocates, and the registers and spills of the pair.
FailureOr<json::Object>
describeSplitLaunches(AttentionOp op, StringRef name, StringRef outputDir,
                      Kernel &kernel, const PtxasReport &first,
                      const KernelCompileOptions &compile) {
  json::Array launches;
  int64_t registers = 0, spills = 0;
  for (auto [i, launch] : llvm::enumerate(kernel.launches)) {
    std::string base = (name + "." + std::to_string(i)).str();
    FailureOr<PtxasReport> report =
        i == 0 ? FailureOr<PtxasReport>(first)
               : writeKernel(op, launch.ptx, outputDir, base, compile);
    if (failed(report))
      return failure();
    registers = std::max(registers, report->registers);
    spills += std::max<int64_t>(report->spillBytes, 0);
    json::Object entry{{"entry", launch.entry},
                       {"ptx", base + ".ptx"},
                       {"cubin", report->wroteCubin
                                     ? json::Value(base + ".cubin")
                                     : json::Value(nullptr)},
                       {"params", std::move(launch.params)},
                       {"grid", std::move(launch.grid)},
                       {"block", json::Array(launch.block)},
                       {"dynamic_shared_memory_bytes", launch.sharedMemory},
                       {"registers", report->registers},
                       {"spill_bytes", report->spillBytes}};
    if (launch.waitsForPrevious)
      entry["programmatic_dependent_launch"] = true;
    launches.push_back(std::move(entry));
    if (i > 0 && compile.log)
      *compile.log << name << " merge (" << launch.entry << "): registers "
                   << report->registers << ", spill bytes "
                   << report->spillBytes << "\n";
  }
  // S x (O's shape) and S x (Q's [B, Hq, M]); S is the runtime's choice.
  json::Array workspace{json::Object{{"name", "o_split"},
                                     {"like", "o"},
                                     {"dtype", "f32"},
                                     {"splits", true}},
                        json::Object{{"name", "lse_split"},
                                     {"like", "q"},
                                     {"like_dims", 3},
                                     {"dtype", "f32"},
                                     {"splits", true}}};
  // One counter per (batch, head, query row) is more than the query blocks
  // need, and a shape the runtime knows: zero before the first call, the
  // kernel leaves it zero.
  if (mergesInLastCta(op, compile))
    workspace.push_back(json::Object{{"name", kSplitCountersWorkspace},
                                     {"like", "q"},
                                     {"like_dims", 3},
                                     {"dtype", "i32"},
                                     {"zero_between_calls", true}});
  return json::Object{{"launches", std::move(launches)},
                      {"workspace", std::move(workspace)},
                      {"key_splits", true},
                      {"registers", registers},
                      {"spill_bytes", spills}};
}

/// Compiles `op` into DIR/<name>.{ptx,cubin} and describes it in
/// `written`; `form`: the persistent form of a kernel. With `onlyRows`, only
/// tiles of that many query rows are tried, and false (nothing built, nothing
/// logged) when none of them assembles without spilling; true otherwise.
FailureOr<bool> compileKernel(AttentionOp op, StringRef name,
                              StringRef outputDir, bool asyncCopies,
                              Written &written,
                              const KernelCompileOptions &compile,
                              bool form = false, int64_t onlyRows = 0) {
  // Forced tiles, or the first of these that fits the chip's shared memory
  // without spilling (measured, docs/GPU-NOTES.md): 32 query rows per warp
  // (each K/V fragment feeds two mma rows), then 16, then smaller tiles;
  // with wgmma, 128 x 48 (the training forward: LSE spills at 128 x 64) and
  // 128 x 128 on two warpgroups before 128 x 32.
  bool wgmma = tensorCoreChoice(compile) == TensorCores::Wgmma && asyncCopies;
  // FlashAttention-3's warp-specialised tiles first where TMA loads K and V
  // (docs/GPU-NOTES.md 48): three consumer warpgroups of 64 rows for
  // D <= 64, two otherwise, their score MMAs taking turns, with 176 keys per
  // step for D <= 128 (+5% at 16k without a causal mask, +3-4.5% with one,
  // whose diagonal blocks waste more of the wider step; a causal persistent
  // form keeps 128, 2-5% faster there: docs/GPU-NOTES.md 67) and 80 above
  // D = 128 (+4-8% over 64 at D = 256, FlashAttention-3's shape).
  bool specialize = wgmma && compile.warpSpecialize && forwardTmaLoads(compile);
  int64_t headDim = std::max(op.getQuery().getType().getShape().back(),
                             op.getValue().getType().getShape().back());
  SmallVector<Config> configs;
  if (compile.blockRows || compile.blockCols || compile.threadsPerBlock) {
    Config forced = {compile.blockRows ? compile.blockRows : 32,
                     compile.blockCols ? compile.blockCols : 32,
                     compile.threadsPerBlock ? compile.threadsPerBlock : 128};
    forced.warpSpecialized = specialize;
    configs.push_back(forced);
  } else if (wgmma) {
    if (specialize) {
      // Each with its ragged key blocks narrowed, then (where those
      // registers make it spill, as D = 64's 192 x 128 persistent form)
      // without.
      auto specialised = [&](int64_t rows, int64_t cols, int64_t threads) {
        Config config = {rows, cols, threads, /*wgmmaOnly=*/true,
                         /*warpSpecialized=*/true};
        configs.push_back(config);
        config.raggedKeys = false;
        configs.push_back(config);
      };
      // A causal persistent form keeps 128 x 128 at D <= 128 (measured: at
      // D = 64 192 x 128 is 1.05-1.07x at 4k-6k keys but 0.8-0.9x at 1k-2k,
      // docs/GPU-NOTES.md 68).
      bool causalForm = op.getCausal() && form;
      // A split-KV kernel's tile holds the few rows of a decode step (M x
      // the group's query heads): one consumer warpgroup of 64 rows streams
      // its keys with half the MMA and softmax work of two, 128 keys a step
      // (the split kernel 10.7 against 13.4 us at B = 1, 8k keys, 128 x 176's;
      // 48.1 against 50.8 at 32k: docs/GPU-NOTES.md 85). At D = 64 against
      // 192 x 128, 1.2x as fast from B = 1 to 64 (note 86).
      if (compile.keySplits && headDim <= 128) {
        specialised(64, 128, 128);
        // Pages of 64 keys take 64-key steps.
        specialised(64, 64, 128);
      }
      if (headDim <= 64 && !causalForm)
        specialised(192, 128, 384);
      else if (headDim <= 128 && !causalForm)
        specialised(128, 176, 256);
      specialised(128, headDim <= 128 ? 128 : 80, 256);
      specialised(128, 64, 256);
    }
    configs.append({{128, 64, 128},
                    {128, 48, 128, true},
                    {128, 128, 256, true},
                    {128, 32, 128},
                    {128, 64, 256},
                    {128, 32, 256},
                    {64, 64, 128},
                    {64, 32, 128},
                    {32, 32, 128},
                    {16, 16, 128}});
  } else {
    // The eager rescale first: 4-5% faster at D = 64; at D = 128 it spills
    // and 128 x 64 keeps the vote.
    Config eager = {128, 64, 128};
    eager.lazyRescale = false;
    configs = {eager,          {128, 64, 128}, {128, 32, 128}, {128, 64, 256},
               {128, 32, 256}, {64, 64, 128},  {64, 32, 128},  {32, 32, 128},
               {16, 16, 128}};
  }
  if (onlyRows)
    llvm::erase_if(configs,
                   [&](const Config &c) { return c.rows != onlyRows; });
  // Paged K/V: the tiler cuts key blocks to gcd(Bc, page size) so that none
  // straddles two pages; keys per step that do not divide the page would
  // leave far narrower blocks than they say (128 x 48 on pages of 128 ran
  // 128 x 16, 1.5-1.8x slower than 128 x 64).
  int64_t pageSize = op.getBlockTable() ? op.getKey().getType().getDimSize(2)
                                        : ShapedType::kDynamic;
  if (!ShapedType::isDynamic(pageSize)) {
    Config last = configs.back();
    llvm::erase_if(configs,
                   [&](const Config &c) { return pageSize % c.cols != 0; });
    if (configs.empty())
      configs.push_back(last);
  }
  std::string ptxPath = kernelPath(
      outputDir, compile.keySplits ? (name + ".0").str() : name, ".ptx");
  for (size_t i = 0; i < configs.size(); ++i) {
    Config config = configs[i];
    bool last = !onlyRows && i + 1 == configs.size();
    // Every configuration but the last may be too large: the pipeline says
    // so before the kernel is unrolled, and the next one is tried. The
    // last one's error names the limit.
    FailureOr<std::optional<Kernel>> built =
        build(op, name, config, asyncCopies, /*tryingTiles=*/!last, compile);
    if (failed(built))
      return failure();
    if (!*built)
      continue;
    Kernel kernel = std::move(**built);
    if (config.wgmmaOnly && !kernel.main().wgmma && !last)
      continue;
    bool specialized =
        !kernel.main().block.empty() &&
        kernel.main().block.front().getAsInteger() == config.threads + 128;
    if (config.warpSpecialized && !specialized && !last)
      continue;
    // Lowering and assembling is most of a build: skip what ptxas would
    // only report as spilling.
    if (!last && mustSpill(kernel, config, op, compile))
      continue;
    // When only one CTA fits on an SM, give it 16 warps instead of 8
    // (measured: D = 128 at 128 x 32 went from 10.4 to 13.5 TFLOP/s).
    if (!compile.threadsPerBlock && !kernel.main().registerTiles &&
        config.threads == 256 &&
        2 * kernel.main().sharedMemory >
            maxSharedMemoryPerBlock(compile.chip)) {
      Config wider = {config.rows, config.cols, 512};
      FailureOr<std::optional<Kernel>> widened =
          build(op, name, wider, asyncCopies, /*tryingTiles=*/false, compile);
      if (failed(widened))
        return failure();
      config = wider;
      kernel = std::move(**widened);
    }
    FlashGpuPipelineOptions options;
    setPipelineOptions(options, config, asyncCopies, compile);
    if (failed(lowerToPtx(op, *kernel.module, options, kernel.launches)))
      return failure();
    FailureOr<PtxasReport> assembled =
        writeKernel(op, kernel.main().ptx, outputDir,
                    compile.keySplits ? (name + ".0").str() : name, compile);
    if (failed(assembled))
      return failure();
    if (assembled->spillBytes > 0 && !last)
      continue;
    // A causal mma.sync kernel reading swizzled tiles that takes every
    // register with its lanes' addresses hoisted out of the key loops (a
    // base per column chunk step each) is rebuilt with them in each
    // iteration, and taken where that fits: the hoisted form's fragment
    // loads wait on shared memory (ncu: short-scoreboard stalls 2.6x the
    // padded kernel's). Measured on sm_80 D = 128 (docs/GPU-NOTES.md 95):
    // causal 1.05-1.07x so, without a mask 0.98x at 4k (hoisted kept
    // there), padded tiles 0.96-0.98x.
    if (compile.perIterationLanes && !config.perIterationLanes &&
        !compile.keySplits && op.getCausal() &&
        assembled->registers >= kMaxRegisters &&
        kernel.main().swizzledLdmatrix) {
      Config laned = config;
      laned.perIterationLanes = true;
      FailureOr<std::optional<Kernel>> rebuilt =
          build(op, name, laned, asyncCopies, /*tryingTiles=*/false, compile);
      if (failed(rebuilt))
        return failure();
      FlashGpuPipelineOptions lanedOptions;
      setPipelineOptions(lanedOptions, laned, asyncCopies, compile);
      Kernel &lanedKernel = **rebuilt;
      if (failed(lowerToPtx(op, *lanedKernel.module, lanedOptions,
                            lanedKernel.launches)))
        return failure();
      FailureOr<PtxasReport> again =
          writeKernel(op, lanedKernel.main().ptx, outputDir, name, compile);
      if (failed(again))
        return failure();
      if (again->spillBytes == 0) {
        config = laned;
        kernel = std::move(lanedKernel);
        assembled = again;
      } else if (failed(assembled = writeKernel(op, kernel.main().ptx,
                                                outputDir, name, compile))) {
        return failure();
      }
    }
    PtxasReport &ptxasReport = *assembled;
    std::optional<json::Object> splitManifest;
    if (compile.keySplits) {
      FailureOr<json::Object> pair = describeSplitLaunches(
          op, name, outputDir, kernel, ptxasReport, compile);
      if (failed(pair))
        return failure();
      splitManifest = std::move(*pair);
    }

    json::Object manifest{
        {"kernel", name},
        {"entry", kernel.main().entry},
        {"chip", stringifyChip(compile.chip)},
        {"ptx", (name + ".ptx").str()},
        {"cubin", ptxasReport.wroteCubin ? json::Value((name + ".cubin").str())
                                         : json::Value(nullptr)},
        {"params", std::move(kernel.main().params)},
        // grid = (ceil(M / Br), Hq, B) from the [B, Hq, M, D] query.
        {"grid", json::Array{json::Object{{"tensor", "q"},
                                          {"dim", 2},
                                          {"ceil_div", config.rows}},
                             json::Object{{"tensor", "q"}, {"dim", 1}},
                             json::Object{{"tensor", "q"}, {"dim", 0}}}},
        {"block", json::Array(kernel.main().block)},
        {"dynamic_shared_memory_bytes", kernel.main().sharedMemory},
        // The grid above is the most CTAs; a persistent kernel walks its
        // tiles with any fewer.
        {"persistent", static_cast<bool>(options.persistent)},
        {"block_rows", config.rows},
        {"block_cols", config.cols},
        {"has_lse", static_cast<bool>(op.getLse())},
        {"mapping",
         kernel.main().registerTiles ? "warp-registers" : "shared-tiles"},
        {"mma", kernel.main().wgmma ? "wgmma" : "mma.sync"},
        {"registers", ptxasReport.registers},
        {"spill_bytes", ptxasReport.spillBytes},
    };
    if (op.isVarlen() && !splitManifest) {
      // Packed sequences: (S + 1, Hq, blocks of max_seqlen_q), the launch's
      // own grid, with the caller's bound as a host-side scalar.
      manifest["grid"] = json::Array(kernel.main().grid);
      manifest["grid_scalars"] = json::Array{"max_seqlen_q"};
    }
    if (splitManifest) {
      // The pair's launches replace the single launch's entry.
      for (StringRef key : {"entry", "ptx", "cubin", "params", "grid", "block",
                            "dynamic_shared_memory_bytes"})
        manifest.erase(key);
      for (auto &entry : *splitManifest)
        manifest[entry.first] = std::move(entry.second);
    }
    describeAttention(manifest, op);
    written.requiresAlignedRows = kernel.requiresAlignedRows;
    written.warpSpecialized = options.warpSpecialize;
    written.persistent = options.persistent;
    written.rows = config.rows;
    written.cols = config.cols;
    written.manifest = std::move(manifest);
    if (compile.log)
      *compile.log << name << ": " << ptxPath << ", tiles " << config.rows
                   << "x" << config.cols << ", "
                   << *kernel.main().block.front().getAsInteger()
                   << " threads, registers " << ptxasReport.registers
                   << ", spill bytes " << ptxasReport.spillBytes
                   << ", shared memory " << kernel.main().sharedMemory << " B"
                   << (kernel.main().registerTiles ? ", warp registers" : "")
                   << (kernel.main().registerTiles && !kernel.main().wgmma &&
                               !config.lazyRescale
                           ? ", eager rescale"
                           : "")
                   << (config.perIterationLanes ? ", per-iteration lanes" : "")
                   << (kernel.main().wgmma ? ", wgmma" : "") << "\n";
    return true;
  }
  if (onlyRows)
    return false;
  return failure();
}

/// How many keys a persistent form wins to, for the bound `keys`
/// (--persistent-below-keys; docs/GPU-NOTES.md 64, 67-69). Without a mask:
/// with the kernel's tiles twice the bound (D = 64 1.03x at 4096 keys, 1.02x
/// at 8192; D = 128 level at 4096, 0.99x at 8192), with smaller ones a
/// quarter (D = 64 at 128 x 128 against 192 x 128: 1.03x at 512 keys, 0.92x
/// at 2048). Under a causal mask the tiles' key loops are half as long on
/// average and unequal, which the form's folded order balances: four times
/// where it keeps the kernel's query rows (D = 128, 128 x 128 against
/// 128 x 176, and D = 256, 128 x 80 both: 1.05-1.1x at 4096-8192 keys,
/// 0.95-0.97x at 16384), twice where it has fewer. A persistent kernel's
/// form takes the bound itself (D = 64 causal: 128 x 128 1.03x at 2048
/// keys, 0.94x at 3072 against the persistent 192 x 128 kernel).
int64_t formMaxKeys(bool causal, const Written &kernel, const Written &form,
                    bool persistentKernel, int64_t keys) {
  if (persistentKernel)
    return keys;
  if (causal)
    return keys * (form.rows == kernel.rows ? 4 : 2);
  if (form.rows == kernel.rows && form.cols == kernel.cols)
    return keys * 2;
  return keys / 4;
}

} // namespace

/// The kernel for `op`; when it needs aligned rows (cp.async), also the
/// general kernel (element copies) that the runtime uses otherwise. Two
/// kernels rather than a branch inside one: ptxas allocates registers for the
/// whole kernel, and the element-copy path alone made 128 x 64 tiles spill.
/// With `persistentBelowKeys`, a warp-specialised kernel also gets its
/// persistent form, named in the manifest with the most keys it is launched
/// for (`persistent_form`); it shares the general kernel.
LogicalResult
flash::compileAttentionKernel(AttentionOp op, StringRef name,
                              StringRef outputDir,
                              const KernelCompileOptions &compile) {
  std::string general = (name + "_general").str();
  // A kernel that needs aligned rows names `other` for other rows.
  auto write = [&](StringRef kernel, Written &written, StringRef other) {
    return writeManifest(kernelPath(outputDir, kernel, ".json"),
                         std::move(written.manifest), other,
                         written.requiresAlignedRows);
  };
  Written written;
  // A causal kernel of three consumer warpgroups (192 query rows, D <= 64)
  // walks its tiles itself: the folded order balances the unequal causal
  // tiles better than a grid of one CTA per tile (measured 1.01-1.07x at
  // 3k-16k keys, docs/GPU-NOTES.md 69), and its form of 128 x 128 tiles
  // takes the short sequences. Only where those tiles come out persistent.
  int64_t headDim = std::max(op.getQuery().getType().getShape().back(),
                             op.getValue().getType().getShape().back());
  bool persistentKernel = false, built = false;
  // Ragged caches and packed sequences get no persistent kernels (their
  // tiles' key loops differ per sequence; not built or measured so far).
  bool ragged = op.getKeyLengths() || op.isVarlen();
  if (op.getCausal() && headDim <= 64 && !compile.persistent && !ragged &&
      !compile.keySplits && compile.persistentBelowKeys > 0 &&
      compile.warpSpecialize && forwardTmaLoads(compile) &&
      !compile.blockRows && !compile.blockCols && !compile.threadsPerBlock) {
    KernelCompileOptions walking = compile;
    walking.persistent = true;
    FailureOr<bool> walks =
        compileKernel(op, name, outputDir, /*asyncCopies=*/true, written,
                      walking, /*form=*/false, /*onlyRows=*/192);
    if (failed(walks))
      return failure();
    built = *walks;
    persistentKernel = built && written.persistent;
  }
  if (!built && failed(compileKernel(op, name, outputDir, /*asyncCopies=*/true,
                                     written, compile)))
    return failure();
  bool requiresAlignedRows = written.requiresAlignedRows;
  if (written.warpSpecialized && (!written.persistent || persistentKernel) &&
      compile.persistentBelowKeys > 0 && !compile.keySplits && !ragged) {
    std::string persistentName = (name + "_persistent").str();
    KernelCompileOptions persistentOptions = compile;
    persistentOptions.persistent = true;
    Written persistent;
    if (failed(compileKernel(op, persistentName, outputDir,
                             /*asyncCopies=*/true, persistent,
                             persistentOptions, /*form=*/true)))
      return failure();
    // Only the last resort of the tile search is built without a producer
    // warpgroup, and so not persistent: then the kernel has no form.
    if (!persistent.persistent) {
      if (failed(removeKernel(outputDir, persistentName)))
        return failure();
      if (compile.log)
        *compile.log << persistentName
                     << ": removed (no warp-specialised tiles fit)\n";
    } else {
      requiresAlignedRows |= persistent.requiresAlignedRows;
      int64_t maxKeys =
          formMaxKeys(op.getCausal(), written, persistent, persistentKernel,
                      compile.persistentBelowKeys);
      written.manifest["persistent_form"] = json::Object{
          {"kernel", persistentName + ".json"}, {"max_keys", maxKeys}};
      if (failed(write(persistentName, persistent, general)))
        return failure();
    }
  }
  if (failed(write(name, written, general)))
    return failure();
  // Without a cp.async load the kernel is general already (rare: rows that
  // are not a multiple of 16 bytes), and its manifest names no other.
  if (!requiresAlignedRows)
    return success();
  Written generalKernel;
  if (failed(compileKernel(op, general, outputDir, /*asyncCopies=*/false,
                           generalKernel, compile)))
    return failure();
  return write(general, generalKernel, "");
}
