//===- flash-compile.cpp - attention in a module -> GPU kernels -*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// flash-compile INPUT.mlir --chip sm_90a -o DIR
//
// Fuses the attention in INPUT (--flash-fuse-attention-backward, then
// --flash-fuse-attention), then for each flash.attention and
// flash.attention_backward builds a standalone kernel function with dynamic
// batch, heads and sequence lengths whose outputs are written in place into
// arguments, runs --flash-gpu-pipeline on it and writes DIR/<kernel>.ptx,
// DIR/<kernel>.cubin (when ptxas is found) and DIR/<kernel>.json, the
// manifest a runtime needs to launch it.
//
// Exit status: 0 when every kernel was written, 1 on any error (with a
// located diagnostic where the error has a location).
//
//===----------------------------------------------------------------------===//

#include "flash/InitAllFlash.h"

#include "flash/Dialect/Flash/Transforms/Passes.h"
#include "flash/Dialect/Flash/Transforms/Transforms.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using llvm::formatv;
using llvm::raw_string_ostream;
using llvm::SmallString;
using llvm::cl::opt;
namespace cl = llvm::cl;
namespace sys = llvm::sys;
namespace json = llvm::json;

static cl::OptionCategory flashCategory("flash-compile options");

static opt<std::string> inputFile(cl::Positional, cl::Required,
                                  cl::desc("<input.mlir>"),
                                  cl::cat(flashCategory));
static opt<std::string> outputDir("o", cl::Required,
                                  cl::desc("Output directory"),
                                  cl::value_desc("dir"),
                                  cl::cat(flashCategory));

using flash::Chip;
using flash::TensorCores;

static opt<Chip> chip("chip", cl::init(Chip::Sm90a),
                      cl::desc("GPU architecture of the kernels"),
                      cl::values(FLASH_GPU_CHIP_VALUES),
                      cl::cat(flashCategory));

static opt<int64_t> blockRows("block-rows", cl::init(0),
                              cl::desc("Query rows per CTA (0: choose)"),
                              cl::cat(flashCategory));
static opt<int64_t> blockCols("block-cols", cl::init(0),
                              cl::desc("Keys per step (0: choose)"),
                              cl::cat(flashCategory));
static opt<int64_t> kvBlockRows(
    "kv-block-rows", cl::init(0),
    cl::desc("Backward: key rows per dK/dV CTA (0: choose)"),
    cl::cat(flashCategory));
static opt<int64_t> kvBlockColsOption(
    "kv-block-cols", cl::init(0),
    cl::desc("Backward: query rows per dK/dV step (0: choose)"),
    cl::cat(flashCategory));
static opt<int64_t> threads("threads-per-block", cl::init(0),
                            cl::desc("Threads per CTA (0: choose)"),
                            cl::cat(flashCategory));

static opt<TensorCores> tensorCores("tensor-cores", cl::init(TensorCores::Auto),
                                    cl::desc("Tile contractions on tensor "
                                             "cores"),
                                    FLASH_TENSOR_CORES_VALUES,
                                    cl::cat(flashCategory));
static opt<std::string> ptxas("ptxas", cl::init("/usr/local/cuda/bin/ptxas"),
                              cl::desc("ptxas used to make cubins"),
                              cl::value_desc("path"), cl::cat(flashCategory));

/// The spelling of the chip in pass options, manifests and ptxas arguments.
static StringRef chipName() { return flash::stringifyChip(chip); }

namespace {
struct Param {
  std::string name;
  RankedTensorType type;
};

std::string typeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

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
OwningOpRef<ModuleOp> buildKernelModule(
    Location loc, StringRef name, ArrayRef<Param> params, size_t firstOutput,
    function_ref<Operation *(OpBuilder &, function_ref<Value(StringRef)>,
                             TypeRange)>
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

/// func @name(q, k, v, [bias], [mask], o, [lse]) writing o and lse in place.
OwningOpRef<ModuleOp> buildKernelModule(flash::AttentionOp op, StringRef name,
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
  return buildKernelModule(op.getLoc(), name, params, firstOutput,
                           [&](OpBuilder &b, function_ref<Value(StringRef)> arg,
                               TypeRange types) -> Operation * {
                             return flash::AttentionOp::create(
                                 b, op.getLoc(), types, arg("q"), arg("k"),
                                 arg("v"), arg("bias"), arg("mask"),
                                 b.getF32FloatAttr(op.getEffectiveScale()),
                                 op.getCausalAttr(), op.getWindowAttr());
                           });
}

/// func @name(q, k, v, o, do, lse, [bias], [mask], dq, dk, dv) writing the
/// gradients in place (--flash-workspace-to-arguments appends `d`).
OwningOpRef<ModuleOp>
buildBackwardKernelModule(flash::AttentionBackwardOp op, StringRef name,
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
  return buildKernelModule(op.getLoc(), name, params, firstOutput,
                           [&](OpBuilder &b, function_ref<Value(StringRef)> arg,
                               TypeRange types) -> Operation * {
                             return flash::AttentionBackwardOp::create(
                                 b, op.getLoc(), types, arg("q"), arg("k"),
                                 arg("v"), arg("o"), arg("do"), arg("lse"),
                                 arg("bias"), arg("mask"),
                                 b.getF32FloatAttr(op.getEffectiveScale()),
                                 op.getCausalAttr(), op.getWindowAttr());
                           });
}

/// A kernel parameter in a manifest.
json::Object describeParam(const Param &p) {
  json::Array shape;
  for (int64_t d : p.type.getShape())
    shape.push_back(ShapedType::isDynamic(d) ? json::Value(nullptr)
                                             : json::Value(d));
  return json::Object{{"name", p.name},
                      {"rank", p.type.getRank()},
                      {"shape", std::move(shape)},
                      {"dtype", typeName(p.type.getElementType())}};
}

struct PtxasReport {
  bool ran = false;
  int64_t registers = -1, spillBytes = -1;
  std::string log;
};

PtxasReport assemble(StringRef ptxPath, StringRef cubinPath) {
  PtxasReport report;
  if (!sys::fs::can_execute(ptxas))
    return report;
  SmallString<128> logPath;
  sys::fs::createTemporaryFile("ptxas", "log", logPath);
  std::string arch = ("-arch=" + chipName()).str();
  SmallVector<StringRef> args = {ptxas, arch, "-v", "-o", cubinPath, ptxPath};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(logPath),
                                          StringRef(logPath)};
  int rc = sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects);
  if (auto buf = llvm::MemoryBuffer::getFile(logPath))
    report.log = (*buf)->getBuffer().str();
  sys::fs::remove(logPath);
  report.ran = rc == 0;
  SmallVector<StringRef> m;
  if (llvm::Regex("Used ([0-9]+) registers").match(report.log, &m))
    m[1].getAsInteger(10, report.registers);
  int64_t stores = 0, loads = 0;
  SmallVector<StringRef> s;
  if (llvm::Regex("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")
          .match(report.log, &s)) {
    s[1].getAsInteger(10, stores);
    s[2].getAsInteger(10, loads);
    report.spillBytes = stores + loads;
  }
  return report;
}

/// The manifest fields that describe the attention itself (forward or
/// backward): element type, head dims, scale and masking.
template <typename AttentionLikeOp>
void describeAttention(json::Object &manifest, AttentionLikeOp op) {
  RankedTensorType q = op.getQuery().getType();
  RankedTensorType v = op.getValue().getType();
  manifest["dtype"] = typeName(q.getElementType());
  manifest["head_dim"] = q.getShape().back();
  manifest["value_dim"] = v.getShape().back();
  manifest["scale"] = op.getEffectiveScale();
  manifest["causal"] = op.getCausal();
  manifest["window"] =
      op.getWindow() ? json::Value(*op.getWindow()) : json::Value(nullptr);
  manifest["has_bias"] = static_cast<bool>(op.getBias());
  manifest["has_mask"] = static_cast<bool>(op.getMask());
}

LogicalResult writeFile(StringRef path, StringRef data) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "flash-compile: " << error << "\n";
    return failure();
  }
  file->os() << data;
  file->keep();
  return success();
}

/// Writes `manifest` to `path` with the alignment requirement and, for a
/// kernel that has it, the general kernel to use for other rows.
LogicalResult writeManifest(StringRef path, json::Object manifest,
                            StringRef general, bool requiresAlignedRows) {
  manifest["requires_aligned_rows"] = requiresAlignedRows;
  manifest["general"] = general.empty() || !requiresAlignedRows
                            ? json::Value(nullptr)
                            : json::Value((general + ".json").str());
  std::string text;
  raw_string_ostream os(text);
  os << formatv("{0:2}", json::Value(std::move(manifest))) << "\n";
  return writeFile(path, text);
}

/// Shared memory one CTA may use on each chip.
int64_t sharedMemoryLimit() {
  return chip == Chip::Sm80 ? 163 * 1024 : 227 * 1024;
}

struct Config {
  int64_t rows, cols, threads;
  /// Worth it only when the contractions take wgmma.
  bool wgmmaOnly = false;
};

/// The mapping's tensor-core choice: Hopper's warpgroup MMA on sm_90a.
TensorCores tensorCoreChoice() {
  if (tensorCores == TensorCores::Auto && chip == Chip::Sm90a)
    return TensorCores::Wgmma;
  return tensorCores;
}

struct Kernel {
  std::string ptx, entry;
  json::Array params;
  int64_t sharedMemory = 0;
  /// Scores and accumulator in warp registers (FlashAttention-2 mapping).
  bool registerTiles = false;
  /// Contractions on Hopper's warpgroup MMA.
  bool wgmma = false;
  /// Tiles loaded with 16-byte cp.async: every tensor's rows must be
  /// contiguous and 16-byte aligned.
  bool requiresAlignedRows = false;
};

/// Builds the kernel of `op` with `config` and lowers it to PTX.
FailureOr<Kernel> build(flash::AttentionOp op, StringRef name,
                        const Config &config, bool asyncCopies) {
  MLIRContext *ctx = op.getContext();
  SmallVector<Param> params;
  OwningOpRef<ModuleOp> module = buildKernelModule(op, name, params);
  flash::FlashGpuPipelineOptions options;
  options.chip = chip;
  options.format = flash::BinaryFormat::Isa;
  options.blockRows = config.rows;
  options.blockCols = config.cols;
  options.threads = config.threads;
  options.tensorCores = tensorCoreChoice();
  options.asyncCopies = asyncCopies;
  PassManager kernels(ctx);
  flash::buildFlashGpuKernelPipeline(kernels, options);
  if (failed(kernels.run(*module)))
    return op.emitError("flash-compile: building the kernel failed");

  // Which argument each kernel parameter is, and the launch's constants.
  gpu::LaunchFuncOp launch;
  module->walk([&](gpu::LaunchFuncOp l) { launch = l; });
  if (!launch)
    return op.emitError("flash-compile: no kernel was produced");
  Kernel kernel;
  for (Value v : launch.getKernelOperands()) {
    auto argument = dyn_cast<BlockArgument>(v);
    if (!argument)
      return op.emitError("flash-compile: a kernel parameter is not a tensor");
    json::Object param = describeParam(params[argument.getArgNumber()]);
    param["abi"] = "memref: allocated ptr, aligned ptr, i64 offset, i64 "
                   "sizes[rank], i64 strides[rank] (strides in elements)";
    kernel.params.push_back(std::move(param));
  }
  IntegerAttr smem;
  if (Value size = launch.getDynamicSharedMemorySize())
    matchPattern(size, m_Constant(&smem));
  kernel.sharedMemory = smem ? smem.getInt() : 0;
  module->walk([&](gpu::ShuffleOp) { kernel.registerTiles = true; });
  module->walk([&](LLVM::InlineAsmOp a) {
    kernel.wgmma |= a.getAsmString().contains("wgmma.mma_async");
  });
  module->walk(
      [&](nvgpu::DeviceAsyncCopyOp) { kernel.requiresAlignedRows = true; });
  kernel.entry = launch.getKernelName().str();
  std::string kernelModule = launch.getKernelModuleName().str();

  PassManager binary(ctx);
  flash::buildFlashGpuBinaryPipeline(binary, options);
  if (failed(binary.run(*module)))
    return op.emitError("flash-compile: lowering the kernel to PTX failed");
  module->walk([&](gpu::BinaryOp bin) {
    if (bin.getSymName() == kernelModule)
      kernel.ptx = cast<gpu::ObjectAttr>(bin.getObjects()[0])
                       .getObject()
                       .getValue()
                       .str();
  });
  if (kernel.ptx.empty())
    return op.emitError("flash-compile: no PTX was produced");
  return kernel;
}

/// Compiles `op` into DIR/<name>.{ptx,cubin,json}. When the kernel needs
/// aligned rows, its manifest names `general` (if set) as the kernel to use
/// for rows that are not 16-byte aligned.
LogicalResult compileKernel(flash::AttentionOp op, StringRef name,
                            bool asyncCopies, StringRef general,
                            bool &requiresAlignedRows) {
  // Forced tiles, or the first of these that fits the chip's shared memory
  // without spilling (measured, docs/GPU-NOTES.md): 32 query rows per warp
  // (each K/V fragment feeds two mma rows), then 16, then smaller tiles;
  // with wgmma, 128 x 48 (the training forward: LSE spills at 128 x 64) and
  // 128 x 128 on two warpgroups before 128 x 32.
  bool wgmma = tensorCoreChoice() == TensorCores::Wgmma && asyncCopies;
  SmallVector<Config> configs;
  if (blockRows || blockCols || threads)
    configs.push_back({blockRows ? blockRows.getValue() : 32,
                       blockCols ? blockCols.getValue() : 32,
                       threads ? threads.getValue() : 128});
  else if (wgmma)
    configs = {{128, 64, 128},  {128, 48, 128, true},
               {128, 128, 256, true}, {128, 32, 128},
               {128, 64, 256},  {128, 32, 256},  {64, 64, 128},
               {64, 32, 128},   {32, 32, 128},   {16, 16, 128}};
  else
    configs = {{128, 64, 128}, {128, 32, 128}, {128, 64, 256}, {128, 32, 256},
               {64, 64, 128},  {64, 32, 128},  {32, 32, 128},  {16, 16, 128}};
  SmallString<128> ptxPath(outputDir), cubinPath(outputDir),
      jsonPath(outputDir);
  sys::path::append(ptxPath, name + ".ptx");
  sys::path::append(cubinPath, name + ".cubin");
  sys::path::append(jsonPath, name + ".json");
  for (size_t i = 0; i < configs.size(); ++i) {
    Config config = configs[i];
    bool last = i + 1 == configs.size();
    FailureOr<Kernel> kernel = build(op, name, config, asyncCopies);
    if (failed(kernel))
      return failure();
    if (config.wgmmaOnly && !kernel->wgmma && !last)
      continue;
    if (kernel->sharedMemory > sharedMemoryLimit()) {
      if (last)
        return op.emitError("flash-compile: the tiles need ")
               << kernel->sharedMemory << " B of shared memory, more than "
               << chipName() << " has";
      continue;
    }
    // When only one CTA fits on an SM, give it 16 warps instead of 8
    // (measured: D = 128 at 128 x 32 went from 10.4 to 13.5 TFLOP/s).
    if (!threads && !kernel->registerTiles && config.threads == 256 &&
        2 * kernel->sharedMemory > sharedMemoryLimit()) {
      Config wider = {config.rows, config.cols, 512};
      FailureOr<Kernel> widened = build(op, name, wider, asyncCopies);
      if (failed(widened))
        return failure();
      config = wider;
      kernel = std::move(widened);
    }
    if (failed(writeFile(ptxPath, kernel->ptx)))
      return failure();
    PtxasReport ptxasReport = assemble(ptxPath, cubinPath);
    if (sys::fs::can_execute(ptxas) && !ptxasReport.ran) {
      llvm::errs() << ptxasReport.log;
      return op.emitError("flash-compile: ptxas rejected ") << ptxPath;
    }
    if (ptxasReport.spillBytes > 0 && !last)
      continue;

    json::Object manifest{
        {"kernel", name},
        {"entry", kernel->entry},
        {"chip", chipName()},
        {"ptx", (name + ".ptx").str()},
        {"cubin", ptxasReport.ran ? json::Value((name + ".cubin").str())
                                  : json::Value(nullptr)},
        {"params", std::move(kernel->params)},
        // grid = (ceil(M / Br), Hq, B) from the [B, Hq, M, D] query.
        {"grid", json::Array{json::Object{{"tensor", "q"},
                                          {"dim", 2},
                                          {"ceil_div", config.rows}},
                             json::Object{{"tensor", "q"}, {"dim", 1}},
                             json::Object{{"tensor", "q"}, {"dim", 0}}}},
        {"block", json::Array{config.threads, 1, 1}},
        {"dynamic_shared_memory_bytes", kernel->sharedMemory},
        {"block_rows", config.rows},
        {"block_cols", config.cols},
        {"has_lse", static_cast<bool>(op.getLse())},
        {"mapping", kernel->registerTiles ? "warp-registers" : "shared-tiles"},
        {"mma", kernel->wgmma ? "wgmma" : "mma.sync"},
        {"registers", ptxasReport.registers},
        {"spill_bytes", ptxasReport.spillBytes},
    };
    describeAttention(manifest, op);
    requiresAlignedRows = kernel->requiresAlignedRows;
    if (failed(writeManifest(jsonPath, std::move(manifest), general,
                             requiresAlignedRows)))
      return failure();
    llvm::outs() << name << ": " << ptxPath << ", tiles " << config.rows << "x"
                 << config.cols << ", " << config.threads
                 << " threads, registers " << ptxasReport.registers
                 << ", spill bytes " << ptxasReport.spillBytes
                 << ", shared memory " << kernel->sharedMemory << " B"
                 << (kernel->registerTiles ? ", warp registers" : "")
                 << (kernel->wgmma ? ", wgmma" : "") << "\n";
    return success();
  }
  return failure();
}

/// A grid dimension of a launch as the runtime computes it: a constant, or
/// a size of a kernel argument divided by a constant, rounding up.
std::optional<json::Object> describeGridDim(Value v, ArrayRef<Param> params) {
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

/// Compiles the backward `op` into DIR/<name>.json and one PTX (and cubin)
/// per launch: the dQ kernel (which also writes D) and the dK/dV kernel.
/// With `asyncCopies` the kernels need aligned rows and the manifest names
/// `general` for other inputs.
LogicalResult compileBackward(flash::AttentionBackwardOp op, StringRef name,
                              bool asyncCopies, StringRef general,
                              int64_t kvBlockCols, int64_t &spills) {
  MLIRContext *ctx = op.getContext();
  SmallVector<Param> params;
  OwningOpRef<ModuleOp> module = buildBackwardKernelModule(op, name, params);
  // Tiled first with this choice of dK/dV steps; the pipeline's own tiling
  // then finds nothing left to tile.
  PassManager tiling(ctx);
  flash::FlashTileAttentionPassOptions tileOptions;
  tileOptions.target = flash::tileTargetOf(chip);
  tileOptions.blockRows = blockRows;
  tileOptions.blockCols = blockCols;
  tileOptions.kvBlockRows = kvBlockRows;
  tileOptions.kvBlockCols = kvBlockCols;

  tiling.addPass(flash::createFlashTileAttentionPass(tileOptions));
  if (failed(tiling.run(*module)))
    return op.emitError("flash-compile: tiling the backward failed");

  flash::FlashGpuPipelineOptions options;
  options.chip = chip;
  options.format = flash::BinaryFormat::Isa;
  options.blockRows = blockRows;
  options.blockCols = blockCols;
  options.threads = threads ? threads.getValue() : 128;
  options.tensorCores = tensorCoreChoice();
  options.asyncCopies = asyncCopies;
  PassManager kernels(ctx);
  flash::buildFlashGpuKernelPipeline(kernels, options);
  if (failed(kernels.run(*module)))
    return op.emitError("flash-compile: building the backward kernels failed");
  // Workspace arguments the pipeline appended, for the manifest.
  auto func = *module->getOps<func::FuncOp>().begin();
  for (unsigned i = params.size(); i < func.getNumArguments(); ++i) {
    auto tag = func.getArgAttrOfType<StringAttr>(i, flash::kWorkspaceAttr);
    auto type = dyn_cast<MemRefType>(func.getArgument(i).getType());
    if (!tag || !type)
      return op.emitError("flash-compile: an unexpected kernel argument");
    params.push_back(
        {tag.getValue().str(),
         RankedTensorType::get(type.getShape(), type.getElementType())});
  }

  struct LaunchInfo {
    std::string entry, kernelModule;
    json::Array params, grid, block;
    int64_t sharedMemory = 0;
    bool registerTiles = false, wgmma = false;
  };
  SmallVector<LaunchInfo> launches;
  std::string problem;
  bool requiresAlignedRows = false;
  module->walk([&](nvgpu::DeviceAsyncCopyOp) { requiresAlignedRows = true; });
  module->walk([&](gpu::LaunchFuncOp launch) {
    LaunchInfo info;
    info.entry = launch.getKernelName().str();
    info.kernelModule = launch.getKernelModuleName().str();
    for (Value v : launch.getKernelOperands()) {
      auto argument = dyn_cast<BlockArgument>(v);
      if (!argument) {
        problem = "a kernel parameter is not a tensor";
        return;
      }
      info.params.push_back(describeParam(params[argument.getArgNumber()]));
    }
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    for (Value g : {grid.x, grid.y, grid.z}) {
      std::optional<json::Object> d = describeGridDim(g, params);
      if (!d) {
        problem = "a grid size is not a tensor size over a constant";
        return;
      }
      info.grid.push_back(std::move(*d));
    }
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    for (Value t : {block.x, block.y, block.z}) {
      IntegerAttr c;
      if (!matchPattern(t, m_Constant(&c))) {
        problem = "a block size is not a constant";
        return;
      }
      info.block.push_back(c.getInt());
    }
    IntegerAttr smem;
    if (Value size = launch.getDynamicSharedMemorySize())
      matchPattern(size, m_Constant(&smem));
    info.sharedMemory = smem ? smem.getInt() : 0;
    launches.push_back(std::move(info));
  });
  if (!problem.empty())
    return op.emitError("flash-compile: ") << problem;
  module->walk([&](gpu::GPUModuleOp m) {
    for (LaunchInfo &l : launches)
      if (l.kernelModule == m.getName())
        m.walk([&](Operation *op) {
          l.registerTiles |= isa<gpu::ShuffleOp>(op);
          if (auto a = dyn_cast<LLVM::InlineAsmOp>(op))
            l.wgmma |= a.getAsmString().contains("wgmma.mma_async");
        });
  });

  PassManager binary(ctx);
  flash::buildFlashGpuBinaryPipeline(binary, options);
  if (failed(binary.run(*module)))
    return op.emitError("flash-compile: lowering the backward to PTX failed");
  json::Array launchList;
  int64_t maxRegisters = 0, spillBytes = 0;
  for (auto [i, l] : llvm::enumerate(launches)) {
    std::string ptx;
    module->walk([&](gpu::BinaryOp bin) {
      if (bin.getSymName() == l.kernelModule)
        ptx = cast<gpu::ObjectAttr>(bin.getObjects()[0])
                  .getObject()
                  .getValue()
                  .str();
    });
    if (ptx.empty())
      return op.emitError("flash-compile: no PTX for ") << l.entry;
    if (l.sharedMemory > sharedMemoryLimit())
      return op.emitError("flash-compile: ")
             << l.entry << " needs " << l.sharedMemory
             << " B of shared memory, more than " << chipName() << " has";
    std::string base = (name + "." + std::to_string(i)).str();
    SmallString<128> ptxPath(outputDir), cubinPath(outputDir);
    sys::path::append(ptxPath, base + ".ptx");
    sys::path::append(cubinPath, base + ".cubin");
    if (failed(writeFile(ptxPath, ptx)))
      return failure();
    PtxasReport report = assemble(ptxPath, cubinPath);
    if (sys::fs::can_execute(ptxas) && !report.ran) {
      llvm::errs() << report.log;
      return op.emitError("flash-compile: ptxas rejected ") << ptxPath;
    }
    maxRegisters = std::max(maxRegisters, report.registers);
    spillBytes += std::max<int64_t>(report.spillBytes, 0);
    launchList.push_back(json::Object{
        {"entry", l.entry},
        {"ptx", base + ".ptx"},
        {"cubin",
         report.ran ? json::Value(base + ".cubin") : json::Value(nullptr)},
        {"params", std::move(l.params)},
        {"grid", std::move(l.grid)},
        {"block", std::move(l.block)},
        {"dynamic_shared_memory_bytes", l.sharedMemory},
        {"mapping", l.registerTiles ? "warp-registers" : "shared-tiles"},
        {"mma", l.wgmma ? "wgmma" : "mma.sync"},
        {"registers", report.registers},
        {"spill_bytes", report.spillBytes}});
    llvm::outs() << name << " launch " << i << " (" << l.entry
                 << "): " << ptxPath << ", registers " << report.registers
                 << ", spill bytes " << report.spillBytes << ", shared memory "
                 << l.sharedMemory << " B"
                 << (l.registerTiles ? ", warp registers" : "")
                 << (l.wgmma ? ", wgmma" : "") << "\n";
  }
  json::Object manifest{
      {"kernel", name},
      {"kind", "backward"},
      {"chip", chipName()},
      {"launches", std::move(launchList)},
      // Parameters the caller does not pass: allocated by the runtime.
      {"workspace", json::Array{json::Object{
                        {"name", "d"}, {"like", "lse"}, {"dtype", "f32"}}}},
      {"registers", maxRegisters},
      {"spill_bytes", spillBytes},
  };
  describeAttention(manifest, op);
  manifest["kv_block_cols"] =
      kvBlockCols ? json::Value(kvBlockCols) : json::Value("target");
  spills = spillBytes;
  SmallString<128> jsonPath(outputDir);
  sys::path::append(jsonPath, name + ".json");
  return writeManifest(jsonPath, std::move(manifest), general,
                       requiresAlignedRows);
}

/// The backward of `op` (and its general pair): the dK/dV nest's query
/// columns from the target's choice, then narrower ones until ptxas needs
/// no spill (D = 128: 32 columns spill 36 bytes in the cp.async kernel).
LogicalResult compileBackwardPair(flash::AttentionBackwardOp op, StringRef name,
                                  bool asyncCopies, StringRef general) {
  int64_t d = std::max(op.getQuery().getType().getShape().back(),
                       op.getValue().getType().getShape().back());
  // dK/dV steps of the target's default width (0), narrower when that
  // spills; with wgmma first twice the default: 64 query rows per step at
  // D = 128 (measured 1.13x), 128 at D = 64 (1.07x causal),
  // docs/GPU-NOTES.md 30 and 33.
  SmallVector<int64_t> candidates = {kvBlockColsOption};
  if (!kvBlockColsOption && !blockRows) {
    if (tensorCoreChoice() == TensorCores::Wgmma && asyncCopies)
      candidates.insert(candidates.begin(), d > 64 ? 64 : 128);
    if (d > 64)
      candidates.push_back(16);
  }
  for (auto [i, cols] : llvm::enumerate(candidates)) {
    int64_t spills = 0;
    if (failed(compileBackward(op, name, asyncCopies, general, cols, spills)))
      return failure();
    if (spills == 0)
      return success();
    if (i + 1 < candidates.size())
      llvm::outs() << name << ": spills " << spills
                   << " bytes; narrower dK/dV steps\n";
  }
  return success();
}

/// The kernel for `op`; when it needs aligned rows (cp.async), also the
/// general kernel (element copies) that the runtime uses otherwise. Two
/// kernels rather than a branch inside one: ptxas allocates registers for the
/// whole kernel, and the element-copy path alone made 128 x 64 tiles spill.
LogicalResult compileOne(flash::AttentionOp op, StringRef name) {
  std::string general = (name + "_general").str();
  bool requiresAlignedRows = false;
  if (failed(compileKernel(op, name, /*asyncCopies=*/true, general,
                           requiresAlignedRows)))
    return failure();
  // Without a cp.async load the kernel is general already (rare: rows that
  // are not a multiple of 16 bytes), and its manifest names no other.
  if (!requiresAlignedRows)
    return success();
  return compileKernel(op, general, /*asyncCopies=*/false, "",
                       requiresAlignedRows);
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAllPasses();
  flash::registerAllFlashPasses();
  cl::HideUnrelatedOptions(flashCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "flash-compile: attention in MLIR -> GPU kernels (PTX, cubin, JSON "
      "manifest)\n\n"
      "Fuses the attention in <input.mlir> and writes, per attention, "
      "<dir>/<kernel>.ptx,\n<dir>/<kernel>.cubin (when ptxas runs) and "
      "<dir>/<kernel>.json.\n\n"
      "Exit status: 0 when every kernel was written; 1 on any error (bad "
      "option,\ninput that does not parse, no attention found, a kernel "
      "that does not build),\nwith a diagnostic on stderr.\n");
  // Sizes are counts; 0 lets flash-compile choose.
  for (opt<int64_t> *size : {&blockRows, &blockCols, &kvBlockRows,
                             &kvBlockColsOption, &threads}) {
    if (*size < 0) {
      llvm::errs() << "flash-compile: --" << size->ArgStr
                   << " must be positive (or 0 to choose), not " << *size
                   << "\n";
      return 1;
    }
  }
  if (tensorCores == TensorCores::Wgmma && chip != Chip::Sm90a) {
    llvm::errs() << "flash-compile: --tensor-cores=wgmma needs --chip=sm_90a\n";
    return 1;
  }
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  flash::registerAllFlashDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  llvm::SourceMgr sources;
  SourceMgrDiagnosticHandler handler(sources, &ctx);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sources, &ctx);
  if (!module)
    return 1;
  // Training graphs first (the backward that reads the saved P becomes
  // flash.attention_backward), then the remaining forward attention.
  PassManager fuse(&ctx);
  fuse.addPass(flash::createFlashFuseAttentionBackwardPass());
  fuse.addPass(flash::createFlashFuseAttentionPass());
  if (failed(fuse.run(*module)))
    return 1;
  SmallVector<flash::AttentionOp> ops;
  module->walk([&](flash::AttentionOp op) { ops.push_back(op); });
  SmallVector<flash::AttentionBackwardOp> backwardOps;
  module->walk(
      [&](flash::AttentionBackwardOp op) { backwardOps.push_back(op); });
  if (ops.empty() && backwardOps.empty()) {
    llvm::errs() << "flash-compile: no attention found in " << inputFile
                 << "\n";
    return 1;
  }
  if (std::error_code ec = sys::fs::create_directories(outputDir)) {
    llvm::errs() << "flash-compile: cannot create " << outputDir << ": "
                 << ec.message() << "\n";
    return 1;
  }
  // Kernels are named after their function, numbered when it has several.
  llvm::DenseMap<Operation *, int> perFunction;
  for (flash::AttentionOp op : ops)
    ++perFunction[op->getParentOfType<FunctionOpInterface>()];
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto func = op->getParentOfType<FunctionOpInterface>();
    std::string name = (func ? func.getName().str() : std::string("module"));
    if (!func || perFunction[func] > 1)
      name += "_" + std::to_string(i);
    for (char &c : name)
      if (!llvm::isAlnum(c) && c != '_')
        c = '_';
    if (failed(compileOne(op, name)))
      return 1;
  }
  // A backward is named after its function, with "_backward" when the
  // function also has a forward or several backwards.
  llvm::DenseMap<Operation *, int> backwardPerFunction;
  for (flash::AttentionBackwardOp op : backwardOps)
    ++backwardPerFunction[op->getParentOfType<FunctionOpInterface>()];
  for (auto [i, op] : llvm::enumerate(backwardOps)) {
    auto func = op->getParentOfType<FunctionOpInterface>();
    std::string name = (func ? func.getName().str() : std::string("module"));
    if (!func || perFunction.count(func) || backwardPerFunction[func] > 1)
      name += "_backward";
    if (!func || backwardPerFunction[func] > 1)
      name += "_" + std::to_string(i);
    for (char &c : name)
      if (!llvm::isAlnum(c) && c != '_')
        c = '_';
    // As for the forward: cp.async kernels for aligned rows, and a general
    // pair (element copies) for any strides.
    std::string general = name + "_general";
    if (failed(compileBackwardPair(op, name, /*asyncCopies=*/true, general)) ||
        failed(compileBackwardPair(op, general, /*asyncCopies=*/false, "")))
      return 1;
  }
  return 0;
}
