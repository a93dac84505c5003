// Plain CUDA device memory for the programs and the tests: fields to hand to
// halo_exchange and copies to and from them (synchronous). A stencil code
// allocates its device fields itself; the library only takes their pointers.
// Without CUDA every function throws usage_error (cuda::unavailable()).
#pragma once

#include <cstddef>

namespace halox::cuda {

void* allocate(size_t bytes);
void release(void* p);
void copy_to_device(void* device, const void* host, size_t bytes);
void copy_to_host(void* host, const void* device, size_t bytes);
void copy_on_device(void* to, const void* from, size_t bytes);

}  // namespace halox::cuda
