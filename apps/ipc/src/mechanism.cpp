#include "halox_programs/ipc/mechanism.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "halox/common/error.hpp"
#include "halox_programs/ipc/cma.hpp"
#include "halox_programs/ipc/map.hpp"
#include "halox_programs/ipc/mpi_datatype.hpp"
#include "halox_programs/ipc/shmem.hpp"
#include "halox_programs/ipc/xpmem.hpp"

namespace halox::ipc {

std::string to_string(mechanism_kind kind) {
  switch (kind) {
    case mechanism_kind::shmem_np:
      return "SHMEM_NP";
    case mechanism_kind::shmem_p:
      return "SHMEM_P";
    case mechanism_kind::cma:
      return "CMA";
    case mechanism_kind::map_nc:
      return "MAP_NC";
    case mechanism_kind::map_c:
      return "MAP_C";
    case mechanism_kind::mpi_dt:
      return "MPI_DT";
    case mechanism_kind::xpmem_nc:
      return "XPMEM_NC";
    case mechanism_kind::xpmem_c:
      return "XPMEM_C";
  }
  return "?";
}

const std::vector<mechanism_kind>& all_mechanisms() {
  static const std::vector<mechanism_kind> all{mechanism_kind::shmem_np, mechanism_kind::shmem_p,
                                               mechanism_kind::cma,      mechanism_kind::map_nc,
                                               mechanism_kind::map_c,    mechanism_kind::mpi_dt,
                                               mechanism_kind::xpmem_nc, mechanism_kind::xpmem_c};
  return all;
}

mechanism_kind parse_mechanism(const std::string& name) {
  std::string key = name;
  for (char& c : key)
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (auto kind : all_mechanisms())
    if (to_string(kind) == key) return kind;
  std::string known;
  for (auto kind : all_mechanisms()) known += (known.empty() ? "" : ", ") + to_string(kind);
  throw usage_error(fmt::format("unknown mechanism '{}' (expected {}, or all)", name, known));
}

ipc_context::ipc_context(MPI_Comm group, size_t source_capacity, bool force_socket)
    : source_capacity_(source_capacity) {
  MPI_Comm_dup(group, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  long pid = static_cast<long>(::getpid());
  MPI_Bcast(&pid, 1, MPI_LONG, 0, comm_);
  owner_pid_ = static_cast<pid_t>(pid);

  std::string problem;
  int fd = -1;
  if (is_owner()) {
    try {
      source_ = shared_arena::create("halox-ipc-source", source_capacity);
      fd = source_.fd();
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (auto error = agree_on_error(comm_, problem); !error.empty())
    throw run_error(fmt::format("cannot create the owner's shared buffer: {}", error));
  auto shared = share_fd(comm_, 0, fd, force_socket);
  how_shared_ = shared.how;
  if (!is_owner()) {
    try {
      source_ = shared_arena::import(shared.fd, /*map_data=*/false);
    } catch (const std::exception& e) {
      problem = e.what();
    }
  }
  if (auto error = agree_on_error(comm_, problem); !error.empty())
    throw run_error(fmt::format("cannot import the owner's shared buffer: {}", error));
}

ipc_context::~ipc_context() {
  source_ = shared_arena{};
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void copy_mechanism::prepare(const block_layout& layout, std::byte* source,
                             std::byte* destination) {
  layout_ = layout;
  source_ = source;
  destination_ = destination;
  error_.clear();
  uint64_t where[2] = {0, 0};
  if (context_.is_owner()) {
    where[0] = static_cast<uint64_t>(source - context_.source());
    where[1] = reinterpret_cast<uintptr_t>(source);
  }
  MPI_Bcast(where, 2, MPI_UINT64_T, 0, context_.comm());
  owner_source_offset_ = where[0];
  owner_source_address_ = where[1];
  on_prepare();
}

copy_span copy_mechanism::copy() {
  double start = now_seconds();
  on_copy();
  double end = now_seconds();
  if (context_.is_owner() && !owner_works()) return {};
  return {start, end};
}

std::string copy_mechanism::verify(uint64_t generation) const {
  if (!error_.empty()) return error_;
  if (context_.is_owner()) return {};
  return check_blocks(destination_, layout_, generation, destination_gap_fill);
}

availability local_availability(mechanism_kind kind) {
  if (kind == mechanism_kind::xpmem_nc || kind == mechanism_kind::xpmem_c) {
    if (auto reason = xpmem_unavailable_reason(); !reason.empty()) return {false, reason};
  }
  return {true, {}};
}

availability probe_availability(mechanism_kind kind, ipc_context& context) {
  auto local = local_availability(kind);
  // Same node, same answer; agreeing anyway keeps a mismatch from hanging.
  auto agreed = agree_on_error(context.comm(), local.available ? "" : local.reason);
  if (!agreed.empty()) return {false, agreed};
  if (kind == mechanism_kind::cma) {
    if (auto reason = probe_cma(context); !reason.empty()) return {false, reason};
  }
  return {true, {}};
}

std::unique_ptr<copy_mechanism> make_mechanism(mechanism_kind kind, ipc_context& context,
                                               const mechanism_options& options) {
  switch (kind) {
    case mechanism_kind::shmem_np:
      return std::make_unique<shmem_copy>(context, options.max_payload, 0);
    case mechanism_kind::shmem_p:
      return std::make_unique<shmem_copy>(context, options.max_payload,
                                          std::max<size_t>(options.chunk_bytes, 1));
    case mechanism_kind::cma:
      return std::make_unique<cma_copy>(context);
    case mechanism_kind::map_nc:
      return std::make_unique<map_copy>(context, false, options.populate);
    case mechanism_kind::map_c:
      return std::make_unique<map_copy>(context, true, options.populate);
    case mechanism_kind::mpi_dt:
      return std::make_unique<mpi_datatype_copy>(context);
    case mechanism_kind::xpmem_nc:
      return std::make_unique<xpmem_copy>(context, false);
    case mechanism_kind::xpmem_c:
      return std::make_unique<xpmem_copy>(context, true);
  }
  throw std::logic_error("unknown mechanism");
}

}  // namespace halox::ipc
