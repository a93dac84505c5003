#include <utility>

#include "transport/cuda/runtime.hpp"

namespace halox::device {

namespace {

template <class Unit>
__device__ void copy_units(const box_record& r, uint64_t block) {
#pragma unroll
  for (uint32_t k = 0; k < units_per_thread; ++k) {
    const uint64_t i = unit_of(r, block, threadIdx.x, k);
    if (i < r.units) {
      uint64_t f = 0, t = 0;
      unit_offsets(r, i, f, t);
      *reinterpret_cast<Unit*>(r.to + t) = *reinterpret_cast<const Unit*>(r.from + f);
    }
  }
}

// One block per units_per_block units of a record (box_records.hpp), in the
// record's own unit: the branch is the same for every thread of a block.
__global__ void copy_records(const box_record* records, uint32_t count) {
  const uint64_t block = blockIdx.x;
  const box_record r = records[record_of_block(records, count, block)];
  switch (r.unit_bytes) {
    case 16:
      copy_units<uint4>(r, block);
      break;
    case 8:
      copy_units<uint2>(r, block);
      break;
    case 4:
      copy_units<uint32_t>(r, block);
      break;
    case 2:
      copy_units<uint16_t>(r, block);
      break;
    default:
      copy_units<uint8_t>(r, block);
      break;
  }
}

}  // namespace

launch_batch::launch_batch(const copy_batch& batch) {
  const auto records = batch.records();
  if (records.empty()) return;
  const size_t bytes = records.size() * sizeof(box_record);
  check(cudaMalloc(reinterpret_cast<void**>(&records_), bytes), "cudaMalloc (box records)");
  check(cudaMemcpy(records_, records.data(), bytes, cudaMemcpyHostToDevice),
        "cudaMemcpy (box records)");
  count_ = static_cast<uint32_t>(records.size());
  blocks_ = batch.blocks();
}

launch_batch::launch_batch(launch_batch&& other) noexcept {
  *this = std::move(other);
}

launch_batch& launch_batch::operator=(launch_batch&& other) noexcept {
  std::swap(records_, other.records_);
  std::swap(count_, other.count_);
  std::swap(blocks_, other.blocks_);
  return *this;
}

launch_batch::~launch_batch() {
  if (records_) cudaFree(records_);
}

void launch_batch::launch(cudaStream_t stream) const {
  if (count_ == 0) return;
  copy_records<<<static_cast<unsigned>(blocks_), threads_per_block, 0, stream>>>(records_, count_);
  check(cudaGetLastError(), "a box copy kernel launch");
}

}  // namespace halox::device
