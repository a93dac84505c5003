#include <utility>

#include "device/cuda/runtime.hpp"

namespace halox::device {

namespace {

// One block per units_per_block units of a record (box_records.hpp).
template <class Unit>
__global__ void copy_records(const box_record* records, uint32_t count) {
  const uint64_t block = blockIdx.x;
  const box_record r = records[record_of_block(records, count, block)];
#pragma unroll
  for (uint32_t k = 0; k < units_per_thread; ++k) {
    const uint64_t i = unit_of(r, block, threadIdx.x, k);
    if (i < r.units) {
      uint64_t f = 0, t = 0;
      unit_offsets(r, i, sizeof(Unit), f, t);
      *reinterpret_cast<Unit*>(r.to + t) = *reinterpret_cast<const Unit*>(r.from + f);
    }
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
  unit_bytes_ = batch.unit_bytes();
  blocks_ = batch.blocks();
}

launch_batch::launch_batch(launch_batch&& other) noexcept {
  *this = std::move(other);
}

launch_batch& launch_batch::operator=(launch_batch&& other) noexcept {
  std::swap(records_, other.records_);
  std::swap(count_, other.count_);
  std::swap(unit_bytes_, other.unit_bytes_);
  std::swap(blocks_, other.blocks_);
  return *this;
}

launch_batch::~launch_batch() {
  if (records_) cudaFree(records_);
}

void launch_batch::launch(cudaStream_t stream) const {
  if (count_ == 0) return;
  const dim3 grid(static_cast<unsigned>(blocks_));
  switch (unit_bytes_) {
    case 16:
      copy_records<uint4><<<grid, threads_per_block, 0, stream>>>(records_, count_);
      break;
    case 8:
      copy_records<uint2><<<grid, threads_per_block, 0, stream>>>(records_, count_);
      break;
    case 4:
      copy_records<uint32_t><<<grid, threads_per_block, 0, stream>>>(records_, count_);
      break;
    case 2:
      copy_records<uint16_t><<<grid, threads_per_block, 0, stream>>>(records_, count_);
      break;
    default:
      copy_records<uint8_t><<<grid, threads_per_block, 0, stream>>>(records_, count_);
      break;
  }
  check(cudaGetLastError(), "a box copy kernel launch");
}

}  // namespace halox::device
