// RUN: fmha-opt %s --fmha-map-parallel-to-gpu -split-input-file -verify-diagnostics
// RUN: not fmha-opt %s --fmha-map-parallel-to-gpu="block-threads=96 row-threads=64" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPTIONS
// RUN: not fmha-opt %s --fmha-map-parallel-to-gpu="thread-elements=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=OPTIONS
// OPTIONS: error: fmha-map-parallel-to-gpu needs 1 <= block-threads <= 1024, row-threads dividing block-threads and thread-elements >= 1; got block-threads={{96|256}}, row-threads={{64|32}}, thread-elements={{1|0}}

// Loops the mapping does not take: one diagnostic each.

func.func @reduction(%x: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{'scf.parallel' op with reductions is not mapped to the GPU}}
  %s = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %v = memref.load %x[%i] : memref<?xf32>
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      scf.reduce.return %r : f32
    }
  }
  return %s : f32
}

// -----

func.func @two_inner(%x: memref<?x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  // expected-error @+1 {{'scf.parallel' op holds more than one inner scf.parallel; the row form maps one (1-D, no reductions)}}
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%c) = (%c0) to (%c8) step (%c1) {
      memref.store %one, %x[%i, %c] : memref<?x8xf32>
      scf.reduce
    }
    scf.parallel (%c) = (%c0) to (%c8) step (%c1) {
      memref.store %one, %x[%i, %c] : memref<?x8xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

func.func @inner_2d(%x: memref<?x8x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{'scf.parallel' op is not mapped to the lanes of a row: the row form takes a 1-D inner scf.parallel without reductions}}
    scf.parallel (%c, %d) = (%c0, %c0) to (%c8, %c8) step (%c1, %c1) {
      memref.store %one, %x[%i, %c, %d] : memref<?x8x8xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

func.func @write_before_inner(%x: memref<?x8xf32>, %y: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{'memref.store' op writes memory before the inner scf.parallel; the row form runs those ops on every lane of the row, so they may only read}}
    memref.store %one, %y[%i] : memref<?xf32>
    scf.parallel (%c) = (%c0) to (%c8) step (%c1) {
      memref.store %one, %x[%i, %c] : memref<?x8xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// The grid is sized on the host before the launch: a trip count that reads
// the kernel's buffers is refused.
func.func @trip_count_from_memory(%x: memref<?xf32>, %n: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %m = memref.load %n[%c0] : memref<1xi32>
  %count = arith.index_cast %m : i32 to index
  // expected-error @+1 {{'scf.parallel' op has a trip count that reads memory (memref.load): the GPU grid is sized on the host from the kernel's sizes}}
  scf.parallel (%i) = (%c0) to (%count) step (%c1) {
    memref.store %one, %x[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
