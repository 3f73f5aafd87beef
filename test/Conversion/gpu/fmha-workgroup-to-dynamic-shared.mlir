// RUN: fmha-opt %s --fmha-workgroup-to-dynamic-shared -split-input-file -verify-diagnostics | FileCheck %s

// Each workgroup attribution becomes a view of the kernel's dynamic
// workgroup memory at a 128-byte aligned offset (a space cast where the
// attribution names the workgroup space by number); the launch of the
// kernel carries the total (64 x 136 x 2 = 17408 and 64 x 33 x 2 = 4224,
// both multiples of 128: 21632). A kernel without attributions and its
// launch are left alone.
// CHECK-LABEL: func.func @host
// CHECK: %[[SIZE:.+]] = arith.constant 21632 : i32
// CHECK: gpu.launch_func @kernels::@staged {{.*}} dynamic_shared_memory_size %[[SIZE]]
// CHECK: gpu.launch_func @kernels::@plain
// CHECK-NOT: dynamic_shared_memory_size
// CHECK-LABEL: gpu.func @staged
// CHECK-SAME: (%[[ARG:.+]]: index) kernel
// CHECK: %[[RAW:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[BYTES:.+]] = memref.memory_space_cast %[[RAW]] : memref<?xi8, #gpu.address_space<workgroup>> to memref<?xi8, 3>
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[K:.+]] = memref.view %[[BYTES]][%[[C0]]][] : memref<?xi8, 3> to memref<64x136xbf16, 3>
// CHECK: %[[C1:.+]] = arith.constant 17408 : index
// CHECK: %[[V:.+]] = memref.view %[[RAW]][%[[C1]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x33xf16, #gpu.address_space<workgroup>>
// CHECK: memref.load %[[K]]
// CHECK: memref.load %[[V]]
// CHECK-LABEL: gpu.func @plain
// CHECK-NOT: gpu.dynamic_shared_memory
module attributes {gpu.container_module} {
  func.func @host(%n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@staged blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%n : index)
    gpu.launch_func @kernels::@plain blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%n : index)
    return
  }
  gpu.module @kernels {
    gpu.func @staged(%i: index) workgroup(%k : memref<64x136xbf16, 3>, %v : memref<64x33xf16, #gpu.address_space<workgroup>>) kernel {
      %a = memref.load %k[%i, %i] : memref<64x136xbf16, 3>
      %b = memref.load %v[%i, %i] : memref<64x33xf16, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @plain(%i: index) kernel {
      gpu.return
    }
  }
}

// -----

// Buffers share bytes where every use of one comes before every use of the
// other with a workgroup barrier between them (two kv loops one after the
// other): %a, %b and %d share offset 0 (their uses are apart); %c, used
// with %b before the second barrier and with %d after it, shares with
// neither: 4096 + 4096 = 8192.
// CHECK-LABEL: func.func @host
// CHECK: %[[SIZE:.+]] = arith.constant 8192 : i32
// CHECK: gpu.launch_func @kernels::@sequential {{.*}} dynamic_shared_memory_size %[[SIZE]]
// CHECK-LABEL: gpu.func @sequential
// CHECK: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[A:.+]] = memref.view %{{.+}}[%[[C0]]][] : memref<?xi8, 3> to memref<32x64xf16, 3>
// CHECK: %[[C0B:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[B:.+]] = memref.view %{{.+}}[%[[C0B]]][] : memref<?xi8, 3> to memref<32x64xf16, 3>
// CHECK: %[[C4K:.+]] = arith.constant 4096 : index
// CHECK-NEXT: %[[C:.+]] = memref.view %{{.+}}[%[[C4K]]][] : memref<?xi8, 3> to memref<32x64xf16, 3>
// CHECK: %[[C0D:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[D:.+]] = memref.view %{{.+}}[%[[C0D]]][] : memref<?xi8, 3> to memref<32x64xf16, 3>
module attributes {gpu.container_module} {
  func.func @host(%n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@sequential blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%n : index)
    return
  }
  gpu.module @kernels {
    gpu.func @sequential(%i: index) workgroup(%a : memref<32x64xf16, 3>, %b : memref<32x64xf16, 3>, %c : memref<32x64xf16, 3>, %d : memref<32x64xf16, 3>) kernel {
      %x = memref.load %a[%i, %i] : memref<32x64xf16, 3>
      gpu.barrier
      %y = memref.load %b[%i, %i] : memref<32x64xf16, 3>
      memref.store %y, %c[%i, %i] : memref<32x64xf16, 3>
      gpu.barrier
      %z = memref.load %c[%i, %i] : memref<32x64xf16, 3>
      memref.store %z, %d[%i, %i] : memref<32x64xf16, 3>
      gpu.return
    }
  }
}

// -----

// A buffer in the 128-byte swizzle (fmha.swizzle) starts on a 1024-byte
// boundary of the shared address space: every view starts past the first
// such boundary of the dynamic memory (found at run time: its start is
// only 16-byte aligned), the swizzled one at a multiple of 1024 past it
// (64 x 33 x 2 = 4224 rounds to 5120), and the launch reserves the 1024
// bytes of slack (5120 + 16384 + 1024 = 22528).
// CHECK-LABEL: func.func @host
// CHECK: %[[SIZE:.+]] = arith.constant 22528 : i32
// CHECK: gpu.launch_func @kernels::@swizzled {{.*}} dynamic_shared_memory_size %[[SIZE]]
// CHECK-LABEL: gpu.func @swizzled
// CHECK: %[[RAW:.+]] = gpu.dynamic_shared_memory
// CHECK: %[[AT:.+]] = memref.extract_aligned_pointer_as_index %[[RAW]]
// CHECK: %[[MOD:.+]] = arith.remsi %[[AT]], %c1024
// CHECK: %[[UP:.+]] = arith.subi %c1024{{.*}}, %[[MOD]]
// CHECK: %[[PAD:.+]] = arith.remsi %[[UP]], %c1024
// CHECK: %[[P0:.+]] = arith.addi %[[PAD]], %c0
// CHECK: memref.view %{{.+}}[%[[P0]]][] : memref<?xi8, 3> to memref<64x33xf16, 3>
// CHECK: %[[P1:.+]] = arith.addi %[[PAD]], %c5120
// CHECK: memref.view %{{.+}}[%[[P1]]][] : memref<?xi8, 3> to memref<64x128xbf16, 3>
module attributes {gpu.container_module} {
  func.func @host(%n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@swizzled blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%n : index)
    return
  }
  gpu.module @kernels {
    gpu.func @swizzled(%i: index) workgroup(%p : memref<64x33xf16, 3>, %k : memref<64x128xbf16, 3> {fmha.swizzle = 128 : i64}) kernel {
      %a = memref.load %p[%i, %i] : memref<64x33xf16, 3>
      %b = memref.load %k[%i, %i] : memref<64x128xbf16, 3>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  func.func @host(%n: index) {
    %c1 = arith.constant 1 : index
    %s = arith.constant 1024 : i32
    // expected-error @+1 {{fmha-workgroup-to-dynamic-shared: the launch already sets a dynamic workgroup memory size other than 0}}
    gpu.launch_func @kernels::@staged blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) dynamic_shared_memory_size %s args(%n : index)
    return
  }
  gpu.module @kernels {
    gpu.func @staged(%i: index) workgroup(%k : memref<64x136xbf16, 3>) kernel {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{fmha-workgroup-to-dynamic-shared: the workgroup attribution 'memref<64x136xbf16, strided<[272, 1]>, 3>' is not a static shape of integers or floats with an identity layout}}
    gpu.func @strided(%i: index) workgroup(%k : memref<64x136xbf16, strided<[272, 1]>, 3>) kernel {
      gpu.return
    }
  }
}
