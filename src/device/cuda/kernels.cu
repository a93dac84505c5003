#include <utility>

#include "device/cuda/runtime.hpp"

namespace halox::device {

namespace {

// Blocks along y take the records, blocks along x the units of one record.
template <class Unit>
__global__ void copy_records(const box_record* records, uint32_t count) {
  for (uint32_t r = blockIdx.y; r < count; r += gridDim.y) {
    const box_record rec = records[r];
    const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
    for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rec.units;
         i += step) {
      uint64_t from = 0, to = 0;
      unit_offsets(rec, i, sizeof(Unit), from, to);
      *reinterpret_cast<Unit*>(rec.to + to) = *reinterpret_cast<const Unit*>(rec.from + from);
    }
  }
}

constexpr unsigned threads_per_block = 256;
constexpr uint64_t most_blocks_per_record = 1024;
constexpr uint32_t most_record_blocks = 65535;

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
  most_units_ = batch.most_units();
}

launch_batch::launch_batch(launch_batch&& other) noexcept { *this = std::move(other); }

launch_batch& launch_batch::operator=(launch_batch&& other) noexcept {
  std::swap(records_, other.records_);
  std::swap(count_, other.count_);
  std::swap(unit_bytes_, other.unit_bytes_);
  std::swap(most_units_, other.most_units_);
  return *this;
}

launch_batch::~launch_batch() {
  if (records_) cudaFree(records_);
}

void launch_batch::launch(cudaStream_t stream) const {
  if (count_ == 0) return;
  const uint64_t x = std::min<uint64_t>((most_units_ + threads_per_block - 1) / threads_per_block,
                                        most_blocks_per_record);
  const dim3 grid(static_cast<unsigned>(std::max<uint64_t>(x, 1)), std::min(count_, most_record_blocks));
  switch (unit_bytes_) {
    case 16: copy_records<uint4><<<grid, threads_per_block, 0, stream>>>(records_, count_); break;
    case 8: copy_records<uint2><<<grid, threads_per_block, 0, stream>>>(records_, count_); break;
    case 4: copy_records<uint32_t><<<grid, threads_per_block, 0, stream>>>(records_, count_); break;
    case 2: copy_records<uint16_t><<<grid, threads_per_block, 0, stream>>>(records_, count_); break;
    default: copy_records<uint8_t><<<grid, threads_per_block, 0, stream>>>(records_, count_); break;
  }
  check(cudaGetLastError(), "a box copy kernel launch");
}

}  // namespace halox::device
