//===- flash-compile.cpp - attention in a module -> GPU kernels -*- C++ -*-===//
//
// Part of the flash-mlir project.
//
// flash-compile INPUT.mlir --chip sm_90a -o DIR
//
// The command line of the kernel driver (include/flash/Driver/Driver.h):
// fuses the attention in INPUT (--flash-fuse-attention-backward, then
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

#include "flash/Driver/Driver.h"
#include "flash/InitAllFlash.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using llvm::cl::opt;
namespace cl = llvm::cl;

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
static opt<int64_t>
    kvBlockRows("kv-block-rows", cl::init(0),
                cl::desc("Backward: key rows per dK/dV CTA (0: choose)"),
                cl::cat(flashCategory));
static opt<int64_t> kvBlockColsOption(
    "kv-block-cols", cl::init(0),
    cl::desc("Backward: query rows per dK/dV step (0: choose)"),
    cl::cat(flashCategory));
static opt<int64_t> threads("threads-per-block", cl::init(0),
                            cl::desc("Threads per CTA (0: choose)"),
                            cl::cat(flashCategory));

static opt<int64_t> loadStages(
    "load-stages", cl::init(0),
    cl::desc("Shared-memory copies of each tile loaded per key block: 1 "
             "(FlashAttention-2's schedule) or 2 (every tile one block ahead; "
             "0: choose)"),
    cl::cat(flashCategory));
static opt<bool> pipelineKeyLoops(
    "pipeline-key-loops", cl::init(false),
    cl::desc("Forward kernels: FlashAttention-3's overlap of the softmax of "
             "one key block with P V of the previous one (sm_90a)"),
    cl::cat(flashCategory));
static opt<bool> tmaLoads(
    "tma-loads", cl::init(true),
    cl::desc("sm_90a forward kernels with two stages: K and V by TMA through "
             "tensor maps the runtime builds (--tma-loads=false: cp.async)"),
    cl::cat(flashCategory));
static opt<bool> raggedTma(
    "ragged-tma", cl::init(true),
    cl::desc("With --tma-loads: kernels of ragged KV caches "
             "(key_lengths, block_table) and packed sequences (cu_seqlens, "
             "forward and backward) load their key-loop tiles by TMA too, "
             "the rows past the valid ones zeroed in shared memory where a "
             "product needs it, and so take the warp-specialised forms "
             "(--ragged-tma=false: cp.async)"),
    cl::cat(flashCategory));
static opt<bool> warpSpecialize(
    "warp-specialize", cl::init(true),
    cl::desc("sm_90a kernels with TMA: a producer warpgroup issues the "
             "copies, the others compute (FlashAttention-3); tried first "
             "(forward and backward), and the form of forced forward tiles "
             "(--warp-specialize=false: every warp computes)"),
    cl::cat(flashCategory));
static opt<bool> persistent(
    "persistent", cl::init(false),
    cl::desc("With --warp-specialize: forward kernels as persistent CTAs, "
             "each walking tiles (the runtime launches about one per SM)"),
    cl::cat(flashCategory));
static opt<int64_t> persistentBelowKeys(
    "persistent-below-keys", cl::init(2048),
    cl::desc("Without --persistent: each warp-specialised forward kernel "
             "also gets a persistent form (<kernel>_persistent), which the "
             "runtime launches when there are at most this many keys: "
             "four times as many under a causal mask (twice where the form "
             "has fewer query rows); without one twice as many where the form "
             "has the kernel's tiles, else a quarter. A causal kernel of "
             "192-row tiles (D <= 64) is persistent itself, its form taking "
             "this many keys (0: no forms, no such kernels)"),
    cl::cat(flashCategory));
static opt<int64_t> emulatedExp2(
    "emulated-exp2", cl::init(0),
    cl::desc("Forward kernels: every n-th exponential of the softmax by a "
             "polynomial on the FMA pipes instead of MUFU (0: none)"),
    cl::cat(flashCategory));
static opt<bool> deterministic(
    "deterministic", cl::init(true),
    cl::desc("Backward kernels with the same bits on every run: a dQ kernel "
             "and a dK/dV kernel (--deterministic=false: FlashAttention-2's "
             "backward, dQ added with f32 atomics in the dK/dV kernel)"),
    cl::cat(flashCategory));
static opt<bool> stagedReductions(
    "staged-reductions", cl::init(false),
    cl::desc("With --deterministic=false on sm_90a: the dQ sums staged in "
             "shared memory (two copies) and added by TMA tensor reductions "
             "(FlashAttention-3's dQ) instead of vector reductions from "
             "registers"),
    cl::cat(flashCategory));
static opt<bool> perIterationLanes(
    "per-iteration-lanes", cl::init(true),
    cl::desc("mma.sync kernels: a backward launch that spills with its "
             "fragment and cp.async addresses hoisted out of the key loop, or "
             "a causal forward reading swizzled tiles that takes all 255 "
             "registers so, is rebuilt with them recomputed in each "
             "iteration, and taken if that spills less "
             "(--per-iteration-lanes=false: always hoisted)"),
    cl::cat(flashCategory));
static opt<bool> exitEmptyTiles(
    "exit-empty-tiles", cl::init(true),
    cl::desc("Packed sequences: a CTA whose block is past its sequence's end "
             "(the grid counts the blocks of the longest) ends at once "
             "instead of running its empty tile"),
    cl::cat(flashCategory));
static opt<bool> swizzleLdmatrix(
    "swizzle-ldmatrix", cl::init(true),
    cl::desc("mma.sync kernels (sm_80, and sm_90a's mma.sync forms): the "
             "shared tiles ldmatrix reads in the 128-byte swizzled layout "
             "(conflict-free cp.async writes) instead of rows padded by 16 "
             "bytes"),
    cl::cat(flashCategory));
static opt<bool> keySplits(
    "key-splits", cl::init(false),
    cl::desc("Forward: split-KV (FlashDecoding) kernels for few query rows "
             "against many keys: each query block's keys cut into S runs on "
             "CTAs of their own, merged by their LSE in a second launch; the "
             "runtime chooses S and allocates the partial results (the "
             "manifest's o_split and lse_split workspaces)"),
    cl::cat(flashCategory));
static opt<bool> mergeInLastCta(
    "merge-in-last-cta", cl::init(true),
    cl::desc("With --key-splits on sm_90a: one launch, the runs of each "
             "query block merged by the CTA of the last to finish (arrival "
             "counters the runtime keeps zeroed: the manifest's "
             "split_counters workspace) instead of a second launch"),
    cl::cat(flashCategory));
static opt<bool> overlapProducts(
    "overlap-products", cl::init(true),
    cl::desc("With --deterministic=false on sm_90a: the dK/dV step's "
             "dPᵀ = V dOᵀ issued beside Sᵀ = K Qᵀ and its warpgroup MMAs "
             "waited for at first use, where that assembles without spills"),
    cl::cat(flashCategory));
static opt<bool> maskFreeBlocks(
    "mask-free-blocks", cl::init(true),
    cl::desc("Backward kernels: the blocks that need no mask (whole keys, "
             "inside the causal band and window) in loops of their own, "
             "whose P has no per-element select; the atomic kernels' search "
             "also tries one loop with the mask under a branch and one "
             "masked loop, in an order measured per chip and head dimension, "
             "and takes the first that assembles without spills "
             "(--mask-free-blocks=false: one masked loop always)"),
    cl::cat(flashCategory));
static opt<bool> maskUnderBranch(
    "mask-under-branch", cl::init(false),
    cl::desc("With --mask-free-blocks: each backward nest keeps one loop, "
             "the blocks that need a mask applying it under a branch on the "
             "block index (fewer registers than loops of their own); the "
             "atomic search falls back to one masked loop where it spills"),
    cl::cat(flashCategory));
static opt<bool> sharedPointers32(
    "shared-pointers-32", cl::init(true),
    cl::desc("sm_90a backward kernels: shared-memory addresses in 32 bits, "
             "as nvcc emits them, instead of 64 (fewer registers: the atomic "
             "dK/dV step then overlaps its products at every head dimension, "
             "the deterministic one at D = 128 takes a producer warpgroup; "
             "=false: 64-bit addresses)"),
    cl::cat(flashCategory));
static opt<int64_t> dqFragmentMajor(
    "dq-fragment-major", cl::init(-1),
    cl::desc("With --deterministic=false: the dQ accumulator in mma.sync "
             "fragment order, 1 (scalar reductions), 2 (pairs) or 4 (two "
             "pairs, sm_90a's vector reductions), or 0 for rows; -1 "
             "(default) takes the chip's choice: 1 on sm_80, 2 on sm_90a"),
    cl::cat(flashCategory));
static opt<bool> pingPong(
    "ping-pong", cl::init(true),
    cl::desc("With --warp-specialize and two consumer warpgroups: their "
             "S = Q Kᵀ MMAs take turns (FlashAttention-3's ping-pong)"),
    cl::cat(flashCategory));
static opt<TensorCores> tensorCores("tensor-cores", cl::init(TensorCores::Auto),
                                    cl::desc("Tile contractions on tensor "
                                             "cores"),
                                    FLASH_TENSOR_CORES_VALUES,
                                    cl::cat(flashCategory));
static opt<std::string> ptxas("ptxas", cl::init("/usr/local/cuda/bin/ptxas"),
                              cl::desc("ptxas used to make cubins"),
                              cl::value_desc("path"), cl::cat(flashCategory));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
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
  flash::KernelCompileOptions options;
  options.chip = chip;
  options.blockRows = blockRows;
  options.blockCols = blockCols;
  options.kvBlockRows = kvBlockRows;
  options.kvBlockCols = kvBlockColsOption;
  options.threadsPerBlock = threads;
  options.tensorCores = tensorCores;
  options.loadStages = loadStages;
  options.pipelineKeyLoops = pipelineKeyLoops;
  options.tmaLoads = tmaLoads;
  options.raggedTma = raggedTma;
  options.warpSpecialize = warpSpecialize;
  options.persistent = persistent;
  options.persistentBelowKeys = persistentBelowKeys;
  options.emulatedExp2Every = emulatedExp2;
  options.deterministic = deterministic;
  options.stagedReductions = stagedReductions;
  options.perIterationLanes = perIterationLanes;
  options.overlapProducts = overlapProducts;
  options.dqFragmentMajor = dqFragmentMajor;
  options.maskFreeBlocks = maskFreeBlocks;
  options.maskUnderBranch = maskUnderBranch;
  options.sharedPointers32 = sharedPointers32;
  options.swizzleLdmatrix = swizzleLdmatrix;
  options.exitEmptyTiles = exitEmptyTiles;
  options.keySplits = keySplits;
  options.mergeInLastCta = mergeInLastCta;
  options.pingPong = pingPong;
  options.ptxas = ptxas;
  if (std::string error = flash::checkKernelCompileOptions(options);
      !error.empty()) {
    llvm::errs() << "flash-compile: " << error << "\n";
    return 1;
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  flash::registerAllFlashDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // A located message for the user, not the IR of a pass's failing op.
  ctx.printOpOnDiagnostic(false);

  llvm::SourceMgr sources;
  SourceMgrDiagnosticHandler handler(sources, &ctx);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sources, &ctx);
  if (!module)
    return 1;
  return failed(flash::compileAttentionKernels(*module, outputDir, options));
}
