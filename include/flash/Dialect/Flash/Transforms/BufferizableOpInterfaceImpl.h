//===- BufferizableOpInterfaceImpl.h - flash ops in bufferization -*- C++
//-*-===//
//
// Part of the flash-mlir project.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_DIALECT_FLASH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define FLASH_DIALECT_FLASH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace flash {
/// One-Shot Bufferize's model of the flash ops that survive tiling
/// (`flash.atomic_add`).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace flash
} // namespace mlir

#endif // FLASH_DIALECT_FLASH_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
