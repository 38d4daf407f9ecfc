//===- WarpRegisterTiles.h - tiles held in warp registers -------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_LIB_CONVERSION_FLASHTOGPU_WARPREGISTERTILES_H
#define FLASH_LIB_CONVERSION_FLASHTOGPU_WARPREGISTERTILES_H

#include "flash/Dialect/Flash/IR/TileRoles.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::flash {

/// The tiles of a CTA's attention loop nest that are indexed by the block's
/// query rows (the scores S and P, the accumulator, the running max and sum,
/// the output tile) kept in registers with FlashAttention-2's ownership: warp
/// w owns rows [w R/W, (w+1) R/W), and each lane holds the elements of the
/// mma.sync m16n8k16 accumulator layout of those rows (lane = 4 g + t: rows
/// g and g + 8 of each 16-row slice, columns 2t, 2t + 1 of each 8-column
/// slice). Row vectors (max, sum) hold one value per owned row, replicated
/// over the four lanes of a quad.
///
/// Ops on them become per-lane code: elementwise generics per owned element,
/// row reductions in registers plus two xor shuffles, contractions as
/// mma.sync with P reused from the accumulator layout as the A operand, the
/// final copy as guarded stores. Tiles loaded from global memory (Q, K, V,
/// bias, mask) stay in shared memory and are read with ldmatrix.
///
/// With `wgmma` (sm_90a, four warps, cp.async loads) the contractions are
/// Hopper's warpgroup MMA instead: the warpgroup computes 64-row slices, so
/// warp w owns rows 16 w + 64 i of slice i (the same per-warp register
/// layout), A and B are read by the tensor cores straight from shared memory
/// through matrix descriptors (A from registers for P), and the operand tiles
/// in shared memory are stored in the 128-byte swizzled layout that the
/// descriptors name (see `swizzledOffset`).
class WarpRegisterTiles {
public:
  WarpRegisterTiles(gpu::LaunchOp launch, int64_t warps);

  /// Finds the tiles that can live in registers: every op on them must be
  /// one that the rewrite knows. Empty when the nest has another shape.
  /// `wgmma` asks for warpgroup MMA where every contraction of the launch
  /// can take it (it stays on mma.sync otherwise). `swizzleLdmatrix` asks,
  /// on mma.sync, for the 128-byte swizzled layout of the shared operand
  /// tiles that only cp.async writes and only ldmatrix and the register
  /// tiles' ops read (in place of rows padded by 16 bytes).
  void analyze(bool wgmma = false, bool swizzleLdmatrix = false);
  bool empty() const { return tiles.empty(); }
  bool contains(Value buffer) const { return tiles.contains(buffer); }
  bool usesWgmma() const { return wgmma; }
  /// Shared-memory tiles read by warpgroup MMA or by ldmatrix: stored
  /// swizzled, unpadded, 1024-byte aligned.
  bool isSwizzled(Value buffer) const { return swizzled.contains(buffer); }

  /// Writes what `analyze` found into the IR, for the later steps:
  /// `flash.tile_storage` on the allocations of the register tiles and the
  /// swizzled ones, `flash.register_rows` and `flash.wgmma` on the launch.
  void record();
  /// The register tiles that `record` wrote into `launch`.
  static WarpRegisterTiles recorded(gpu::LaunchOp launch, int64_t warps);

  /// How `rewrite` writes the per-lane code.
  struct RewriteOptions {
    /// Kernels for aligned rows: a tile stored to global memory is written
    /// two adjacent elements per store where the target's rows are
    /// contiguous and aligned (checked when the kernel runs), element by
    /// element otherwise.
    bool pairStores = false;
    /// With pairStores: 16 bytes per store where a lane's rows hold whole
    /// groups of 32 two-byte columns (after a transpose over the quad).
    bool wideStores = false;
    /// An mma.sync launch multiplies its accumulator by a row rescale only
    /// when some row maximum of the warp moved (a warp vote; alpha is
    /// exactly 1 otherwise); warpgroup MMA launches always multiply.
    bool lazyRescale = true;
    /// Warpgroup MMAs tagged flash.ragged_keys leave out B's zero rows past
    /// a ragged block's keys.
    bool raggedKeys = true;
    /// mma.sync launches rebuild the lane's coordinates at the top of each
    /// loop body from `flashgpu.per_iteration` of the thread index, so that
    /// the per-lane addresses in the loop (ldmatrix fragments, stores) are
    /// one base per iteration plus immediates, not hoisted one each.
    bool perIterationLanes = false;
  };

  /// Replaces the ops on the register tiles with per-lane code; `tid` is
  /// the thread index in the block. Call after shared memory was carved out
  /// for the other tiles.
  LogicalResult rewrite(Value tid, const RewriteOptions &options);

private:
  bool supports(Value tile);
  bool supports(linalg::GenericOp op);
  bool canUseWgmma();
  void swizzleLdmatrixOperands();
  /// Whether every op on the shared tile `tile` keeps to its swizzled
  /// layout: zero fills, loads of whole rows (cp.async or TMA place the
  /// bytes), copies from a register tile (stored per lane), the
  /// contractions `readsSwizzled` accepts, and the register tiles'
  /// elementwise ops reading it whole (at swizzled offsets).
  bool
  keepsSwizzledLayout(Value tile,
                      llvm::function_ref<bool(linalg::GenericOp)> readsSwizzled,
                      bool registerReaders);
  /// The most 32-bit words per block that the tiles hold at one time.
  int64_t maxLiveWords();

  gpu::LaunchOp launch;
  int64_t warps;
  int64_t rows = 0;
  llvm::SetVector<Value> tiles, swizzled;
  bool wgmma = false;
};

/// The element offset of (row, col) of a [rows, cols] 16-bit tile in the
/// 128-byte swizzled layout: 64-column panels one after the other, each
/// `rows` rows of 128 bytes, the 16-byte chunk j of row r stored at chunk
/// j ^ (r % 8) (bank-conflict free for 8-row reads of any chunk column).
Value swizzledOffset(OpBuilder &b, Location loc, Value row, Value col,
                     int64_t rows);

/// The low word of a wgmma shared-memory matrix descriptor of a swizzled
/// tile: its address (>> 4) and the leading byte offset (between 64-column
/// panels along N of a [K, N] B or along M of a [K, M] A). The high word
/// (stride byte offset and swizzle mode) is added where it is used.
Value wgmmaDescriptorLow(OpBuilder &b, Location loc, Value tile,
                         int64_t leadingBytes);

/// How the warpgroups of a CTA share one block's dS K (role
/// GradQueryBlock) of `m` query rows and `n` columns on warpgroup MMA: each
/// takes `slices` 64-row slices and `cols` columns (whole 64-column panels
/// of K), so that every output element is computed by one warpgroup. None
/// when the shape does not divide that way.
struct WarpgroupReduceSplit {
  int64_t slices, cols;
};
std::optional<WarpgroupReduceSplit> splitWarpgroupReduce(int64_t m, int64_t n,
                                                         int64_t warpgroups);

/// The attribute on the generic-space cast of a swizzled shared tile.
inline constexpr llvm::StringLiteral kSwizzledAttr = kSwizzledAttrName;
/// Whether `tile` is the cast of a swizzled shared tile (kSwizzledAttr).
inline bool isSwizzledTile(Value tile) {
  Operation *def = tile.getDefiningOp();
  return def && def->hasAttr(kSwizzledAttr);
}
/// The attribute on the generic-space cast of a `"reduction_stage"` tile.
inline constexpr llvm::StringLiteral kReductionStageAttr =
    "flash.reduction_stage";
/// The named barrier of warpgroup g's staged reductions is this + g (0 is
/// the block barrier, 1 the consumers' and 2 ... 5 the ping-pong turns of
/// warp-specialised kernels).
inline constexpr int64_t kStagedReductionBarrier = 8;

} // namespace mlir::flash

#endif // FLASH_LIB_CONVERSION_FLASHTOGPU_WARPREGISTERTILES_H
