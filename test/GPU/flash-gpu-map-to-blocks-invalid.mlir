// --flash-gpu-map-to-blocks refuses what it cannot make a kernel of, with a
// located error.
// RUN: flash-opt %s --split-input-file --flash-gpu-map-to-blocks -verify-diagnostics

// The kernel takes the function's memrefs only: a buffer made outside the
// forall would be host memory.
func.func @outside(%n: index) {
  %buf = memref.alloc() : memref<64xf32>
  %c0 = arith.constant 0.0 : f32
  // expected-error @+1 {{flash-gpu-map-to-blocks: the kernel reads a buffer that is not a function argument}}
  scf.forall (%i) in (%n) {
    memref.store %c0, %buf[%i] : memref<64xf32>
  }
  return
}

// -----

func.func @rank4(%n: index, %buf: memref<?xf32>) {
  %c0 = arith.constant 0.0 : f32
  // expected-error @+1 {{flash-gpu-map-to-blocks maps a bufferized scf.forall over at most three dims (batch, head, row block) of a tiled attention; this one has rank 4}}
  scf.forall (%a, %b, %c, %d) in (%n, %n, %n, %n) {
    memref.store %c0, %buf[%a] : memref<?xf32>
  }
  return
}

// -----

func.func @bounds(%n: index, %buf: memref<?xf32>) {
  %c0 = arith.constant 0.0 : f32
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{flash-gpu-map-to-blocks: expected zero lower bounds}}
  scf.forall (%a) = (%c2) to (%n) step (%c2) {
    memref.store %c0, %buf[%a] : memref<?xf32>
  }
  return
}

// -----

func.func @steps(%n: index, %buf: memref<?xf32>) {
  %c0 = arith.constant 0.0 : f32
  %c0i = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  // expected-error @+1 {{flash-gpu-map-to-blocks: expected unit steps}}
  scf.forall (%a) = (%c0i) to (%n) step (%c2) {
    memref.store %c0, %buf[%a] : memref<?xf32>
  }
  return
}

// -----

// A nest's own thread count (the split-KV merge's) is whole warps too.
func.func @block_threads(%n: index, %buf: memref<?xf32>) {
  %c0 = arith.constant 0.0 : f32
  // expected-error @+1 {{flash-gpu-map-to-blocks: flash.block_threads must be a multiple of 32 between 32 and 1024, not 100}}
  scf.forall (%a) in (%n) {
    memref.store %c0, %buf[%a] : memref<?xf32>
  } {flash.block_threads = 100 : i64}
  return
}
