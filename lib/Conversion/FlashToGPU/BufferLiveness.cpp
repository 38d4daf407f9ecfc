//===- BufferLiveness.cpp - live ranges of a launch's buffers ---*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "BufferLiveness.h"

#include "flash/Conversion/Passes.h"
#include "flash/Dialect/Flash/IR/TileRoles.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

flash::BufferLiveness::BufferLiveness(gpu::LaunchOp launch) {
  launch.getBody().walk<WalkOrder::PreOrder>(
      [&](Operation *op) { position[op] = count++; });
}

int64_t flash::BufferLiveness::lastInside(Operation *op) const {
  int64_t last = position.lookup(op);
  op->walk([&](Operation *inner) {
    last = std::max(last, position.lookup(inner));
  });
  return last;
}

std::pair<int64_t, int64_t>
flash::BufferLiveness::range(Value buffer) const {
  Operation *alloc = buffer.getDefiningOp();
  // A persistent launch's tile buffers are allocated before its tile loop
  // and written by each tile before they are read: they live from their
  // first use, and the tile loop carries none of them.
  // The copy engine reads a reduction stage after the ops that write it,
  // until a later step's wait: no other tile shares its bytes.
  if (getTileStorage(alloc) == TileStorage::ReductionStage)
    return {0, count};
  SmallVector<Operation *> users;
  SmallVector<Value> aliases = {buffer};
  while (!aliases.empty()) {
    Value v = aliases.pop_back_val();
    for (Operation *user : v.getUsers()) {
      users.push_back(user);
      if (isa<ViewLikeOpInterface>(user))
        llvm::append_range(aliases, user->getResults());
    }
  }
  // The loop of fresh tiles that holds every use (and not the allocation).
  Operation *fresh = nullptr;
  if (!users.empty()) {
    for (Operation *p = users.front()->getParentOp();
         p && !p->isAncestor(alloc); p = p->getParentOp())
      if (p->hasAttr(kFreshTilesAttrName))
        fresh = p;
    if (fresh && !llvm::all_of(users, [&](Operation *user) {
          return fresh->isProperAncestor(user);
        }))
      fresh = nullptr;
  }
  bool perTile = alloc->hasAttr(kTileBufferAttr) || fresh;
  int64_t first = perTile ? count : position.lookup(alloc);
  int64_t last = position.lookup(alloc);
  for (Operation *user : users) {
    if (perTile)
      first = std::min(first, position.lookup(user));
    last = std::max(last, lastInside(user));
    for (Operation *p = user->getParentOp();
         p && p != fresh && !p->isAncestor(alloc); p = p->getParentOp())
      if (isa<LoopLikeOpInterface>(p) && !p->hasAttr(kTileLoopAttr))
        last = std::max(last, lastInside(p));
    if (isa<scf::YieldOp, scf::ForOp, scf::IfOp>(user))
      last = count;
  }
  return {first, last};
}
