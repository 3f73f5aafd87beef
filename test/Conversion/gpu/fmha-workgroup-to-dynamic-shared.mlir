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
