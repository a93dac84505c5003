#include "halox_programs/halo2d/benchmark.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "halox/common/error.hpp"
#include "halox_programs/halo2d/kernels.hpp"
#include "halox_programs/halo2d/message_content.hpp"

namespace halox::halo2d {

benchmark::benchmark(MPI_Comm world, const mesh2d& mesh, bool reorder, std::size_t max_bytes)
    : mesh_(mesh) {
  int dims[2] = {mesh.dims[0], mesh.dims[1]};
  int periods[2] = {mesh.periodic, mesh.periodic};
  MPI_Cart_create(world, 2, dims, periods, reorder ? 1 : 0, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  int coords[2] = {0, 0};
  MPI_Cart_coords(comm_, rank_, 2, coords);
  coords_ = {coords[0], coords[1]};

  // Page-aligned and touched now, so no first-touch lands in a timed trial.
  const std::size_t page = 4096;
  const std::size_t length = (std::max<std::size_t>(max_bytes, 1) + page - 1) / page * page;
  for (auto* pool : {&send_buffers_, &receive_buffers_})
    for (size_t d = 0; d < all_directions.size(); ++d) {
      pool->emplace_back(static_cast<std::byte*>(std::aligned_alloc(page, length)));
      if (!pool->back()) throw std::bad_alloc();
      std::memset(pool->back().get(), 0, length);
    }
}

benchmark::~benchmark() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

int benchmark::rank_at(const coord2& coords) const {
  int c[2] = {coords[0], coords[1]};
  int rank = 0;
  MPI_Cart_rank(comm_, c, &rank);
  return rank;
}

namespace {

std::string describe_difference(std::span<const std::byte> got, const message_id& id,
                                std::size_t index) {
  std::string text = fmt::format("byte {} of {} is 0x{:02x}, expected 0x{:02x}", index, id.bytes,
                                 static_cast<unsigned>(got[index]),
                                 static_cast<unsigned>(expected_byte(id, index)));
  message_id previous = id;
  previous.iteration -= 1;
  if (!first_mismatch(got, previous))
    text += fmt::format(" (it holds iteration {}'s content: a stale message)", previous.iteration);
  return text;
}

// One measurement's messages and buffers: fresh content before an exchange,
// and a check of every received byte, source, tag and count after it.
class message_buffers {
 public:
  struct where {  // named in a verification failure
    test_kind test;
    int neighbor_count = 0;
    int rank = 0;
    coord2 coords{0, 0};
  };

  message_buffers(const exchange_messages& messages, std::vector<std::byte*> sends,
                  std::vector<std::byte*> receives, std::size_t bytes, const where& at)
      : messages_(messages),
        sends_(std::move(sends)),
        receives_(std::move(receives)),
        bytes_(bytes),
        at_(at) {}

  // Fresh content in every send buffer, and receive buffers that differ from
  // the expected message in every byte.
  void prepare(std::uint64_t iteration, fault_kind fault) const {
    for (size_t i = 0; i < sends_.size(); ++i) {
      std::span<std::byte> out(sends_[i], bytes_);
      bool stale = fault == fault_kind::stale;
      fill_content(out, send_id(i, stale ? iteration - 1 : iteration));
      if (fault == fault_kind::corrupt && bytes_ > 0) out[bytes_ - 1] ^= std::byte{0x5a};
    }
    for (size_t i = 0; i < receives_.size(); ++i)
      fill_complement({receives_[i], bytes_}, receive_id(i, iteration));
  }

  // Empty when every message arrived as sent; else the first difference.
  std::string verify(std::uint64_t iteration, const std::vector<MPI_Status>* statuses) const {
    for (size_t i = 0; i < receives_.size(); ++i) {
      const auto& from = messages_.receives[i];
      std::string problem = statuses ? envelope_problem((*statuses)[i], from) : std::string();
      auto id = receive_id(i, iteration);
      std::span<const std::byte> got(receives_[i], bytes_);
      if (problem.empty())
        if (auto index = first_mismatch(got, id)) problem = describe_difference(got, id, *index);
      if (!problem.empty())
        return fmt::format(
            "verification failed: test {}, {} neighbours, {} B, iteration {}: rank {} at {} "
            "received from rank {} (direction {}, tag {}): {}",
            name_of(at_.test), at_.neighbor_count, bytes_, iteration, at_.rank,
            to_string(at_.coords), from.peer,
            all_directions[static_cast<size_t>(from.direction)].name, from.direction, problem);
    }
    return std::string();
  }

 private:
  message_id send_id(size_t i, std::uint64_t iteration) const {
    return message_id{at_.rank, messages_.sends[i].direction, bytes_, iteration};
  }
  message_id receive_id(size_t i, std::uint64_t iteration) const {
    return message_id{messages_.receives[i].peer, messages_.receives[i].direction, bytes_,
                      iteration};
  }
  template <typename Transfer>
  std::string envelope_problem(const MPI_Status& status, const Transfer& from) const {
    int count = -1;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (status.MPI_SOURCE != from.peer || status.MPI_TAG != from.direction)
      return fmt::format("it came from rank {} with tag {}", status.MPI_SOURCE, status.MPI_TAG);
    if (count != static_cast<int>(bytes_))
      return fmt::format("it has {} bytes instead of {}", count, bytes_);
    return std::string();
  }

  const exchange_messages& messages_;
  std::vector<std::byte*> sends_, receives_;
  std::size_t bytes_;
  where at_;
};

}  // namespace

measurement benchmark::measure(test_kind test, int neighbor_count, std::size_t bytes,
                               const measure_settings& settings) {
  auto plan = plan_messages(test, mesh_, neighbor_count, coords_);
  exchange_messages messages;
  messages.phases = plan.phases;
  messages.neighbor_count = neighbor_count;
  std::vector<std::byte*> sends, receives;
  for (const auto& t : plan.sends) {
    messages.sends.push_back({t.direction, rank_at(t.peer), t.phase});
    sends.push_back(send_buffers_[sends.size()].get());
  }
  for (const auto& t : plan.receives) {
    messages.receives.push_back({t.direction, rank_at(t.peer), t.phase});
    receives.push_back(receive_buffers_[receives.size()].get());
  }
  exchange_kernel kernel(comm_, test, messages, sends, receives, bytes);
  const message_buffers buffers(messages, sends, receives, bytes,
                                {test, neighbor_count, rank_, coords_});

  std::string problem;
  if (settings.check)
    for (int c = 0; c < settings.check_iterations; ++c) {
      std::uint64_t iteration = next_iteration_++;
      buffers.prepare(iteration, settings.fault);
      auto statuses = kernel.run_once_with_statuses();
      if (problem.empty()) problem = buffers.verify(iteration, &statuses);
    }
  kernel.run(settings.warmup);

  measurement result;
  result.test = test;
  result.neighbors = neighbor_count;
  result.bytes = bytes;
  result.repetitions = settings.repetitions;
  const bool timed_here = test != test_kind::single || coords_ == single_sender(mesh_);
  for (int trial = 0; trial < settings.trials; ++trial) {
    std::uint64_t iteration = next_iteration_++;
    if (settings.check) buffers.prepare(iteration, settings.fault);
    MPI_Barrier(comm_);
    double start = MPI_Wtime();
    kernel.run(settings.repetitions);
    double seconds = (MPI_Wtime() - start) / settings.repetitions;
    if (settings.check && problem.empty()) problem = buffers.verify(iteration, nullptr);
    double mine = timed_here ? seconds : 0.0, worst = 0.0;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, comm_);
    result.trial_seconds.push_back(worst);
  }
  result.seconds_per_exchange =
      *std::min_element(result.trial_seconds.begin(), result.trial_seconds.end());
  if (auto message = agree_on_error(comm_, problem); !message.empty()) throw run_error(message);
  return result;
}

}  // namespace halox::halo2d
