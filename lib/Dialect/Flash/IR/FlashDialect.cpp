//===- FlashDialect.cpp - flash dialect -------------------------*- C++ -*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#include "flash/Dialect/Flash/IR/FlashDialect.h"
#include "flash/Dialect/Flash/IR/FlashOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::flash;

#include "flash/Dialect/Flash/IR/FlashDialect.cpp.inc"

void FlashDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "flash/Dialect/Flash/IR/FlashOps.cpp.inc"
      >();
}

LogicalResult FlashDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  if (attr.getName() == kWorkspaceAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kWorkspaceAttrName << "' of argument "
                             << argIndex << " must be a string";
    return success();
  }
  if (attr.getName() == kMaxQueryRowsAttrName ||
      attr.getName() == kMaxKeyRowsAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << attr.getName().getValue() << "' of argument " << argIndex
             << " must be a unit attribute";
    return success();
  }
  if (attr.getName() == "flash.tensor_maps") {
    // --flash-map-tiles-to-gpu{tma-loads}'s tensor-map buffer: one
    // dictionary per map, each naming an argument of the same function.
    auto maps = dyn_cast<ArrayAttr>(attr.getValue());
    auto fn = dyn_cast<FunctionOpInterface>(op);
    for (Attribute a : maps ? maps.getValue() : ArrayRef<Attribute>()) {
      auto map = dyn_cast<DictionaryAttr>(a);
      auto tensor = map ? map.getAs<IntegerAttr>("tensor") : IntegerAttr();
      if (!tensor || !map.getAs<IntegerAttr>("box_rows") ||
          !map.getAs<IntegerAttr>("row_dim") ||
          !map.getAs<IntegerAttr>("box_cols") ||
          !map.getAs<IntegerAttr>("swizzle_bytes") || !fn ||
          tensor.getInt() < 0 ||
          tensor.getInt() >= (int64_t)fn.getNumArguments())
        maps = nullptr;
    }
    if (!maps)
      return op->emitError()
             << "'flash.tensor_maps' of argument " << argIndex
             << " must list {tensor, row_dim, box_rows, box_cols, "
                "swizzle_bytes} "
                "dictionaries naming arguments of the function";
    return success();
  }
  if (attr.getName() != kSizesAttrName)
    return op->emitError() << "unknown flash argument attribute '"
                           << attr.getName().getValue() << "'";
  // A declaration has no region: its argument types come from the
  // function type. Bufferization turns the tensor into a memref of the same
  // shape.
  Type argType;
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    argType = fn.getArgumentTypes()[argIndex];
  else if (!op->getRegion(regionIndex).empty())
    argType = op->getRegion(regionIndex).getArgument(argIndex).getType();
  auto type = dyn_cast_or_null<ShapedType>(argType);
  auto sizes = dyn_cast<ArrayAttr>(attr.getValue());
  if (!type || !type.hasRank() || !sizes ||
      sizes.size() != (size_t)type.getRank())
    return op->emitError() << "'" << kSizesAttrName << "' of argument "
                           << argIndex
                           << " must be an array with one entry per "
                              "dimension of a ranked tensor or memref";
  for (auto [dim, entry] : llvm::enumerate(sizes.getValue())) {
    int64_t size = type.getDimSize(dim);
    if (auto symbol = dyn_cast<StringAttr>(entry)) {
      if (!ShapedType::isDynamic(size) || symbol.empty())
        return op->emitError()
               << "'" << kSizesAttrName << "' of argument " << argIndex
               << ": a symbol names a dynamic dimension, but dimension " << dim
               << " is " << size;
      continue;
    }
    auto fixed = dyn_cast<IntegerAttr>(entry);
    if (!fixed || ShapedType::isDynamic(size) ||
        fixed.getValue().getSExtValue() != size)
      return op->emitError() << "'" << kSizesAttrName << "' of argument "
                             << argIndex << ": dimension " << dim << " is "
                             << (ShapedType::isDynamic(size)
                                     ? std::string("dynamic (name it)")
                                     : std::to_string(size));
  }
  return success();
}
