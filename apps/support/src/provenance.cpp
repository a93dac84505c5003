#include "halox_programs/provenance.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/core.h>

#include "halox/common/error.hpp"

#ifndef HALOX_GIT_REVISION
#define HALOX_GIT_REVISION "unknown"
#endif

extern char** environ;

namespace halox {

std::string cpu_binding_string() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  std::string out;
  int start = -1;
  for (int cpu = 0; cpu <= CPU_SETSIZE; ++cpu) {
    bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);
    if (in && start < 0) start = cpu;
    if (!in && start >= 0) {
      if (!out.empty()) out += ',';
      out += start == cpu - 1 ? fmt::format("{}", start) : fmt::format("{}-{}", start, cpu - 1);
      start = -1;
    }
  }
  return out;
}

std::string git_revision() { return HALOX_GIT_REVISION; }

// The CPU model as the kernel names it ("Intel(R) Xeon(R) ..."), for reports.
static std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.starts_with("model name"))
      if (auto colon = line.find(':'); colon != std::string::npos)
        return line.substr(line.find_first_not_of(" \t", colon + 1));
  return "unknown";
}

static std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  std::vector<int> offsets(static_cast<size_t>(size), 0);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<size_t>(r)] = total;
    total += lengths[static_cast<size_t>(r)];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                 MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r)
    out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                             static_cast<size_t>(lengths[static_cast<size_t>(r)])));
  return out;
}

nlohmann::json collect_provenance(MPI_Comm comm) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  auto hosts = gather_strings(comm, host);
  auto bindings = gather_strings(comm, cpu_binding_string());
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t r = 0; r < hosts.size(); ++r)
    ranks.push_back({{"rank", r}, {"host", hosts[r]}, {"cpus", bindings[r]}});

  // Settings that change which data path the MPI library takes.
  nlohmann::json settings = nlohmann::json::object();
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view kv(*entry);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = kv.substr(0, eq);
    if (key.starts_with("OMPI_MCA_") || key.starts_with("UCX_") || key.starts_with("MPIR_CVAR_") ||
        key.starts_with("FI_") || key.starts_with("HALOX_") || key == "OMP_NUM_THREADS")
      settings[std::string(key)] = std::string(kv.substr(eq + 1));
  }

  int size = 1;
  MPI_Comm_size(comm, &size);
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return {{"schema_version", result_schema_version},
          {"halox_revision", git_revision()},
          {"timestamp", stamp},
          {"mpi_library", mpi_library_version()},
          {"ranks", size},
          {"rank_map", ranks},
          {"machine", {{"cpu_model", cpu_model()}, {"cpus", sysconf(_SC_NPROCESSORS_ONLN)}}},
          {"environment", settings}};
}

void require_appendable(MPI_Comm comm, const std::string& path) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string problem;
  if (rank == 0 && !path.empty()) {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0)
      problem = fmt::format("cannot open result file '{}' for appending: {}", path,
                            std::strerror(errno));
    else
      ::close(fd);
  }
  require_all(comm, problem);
}

void append_json_line(const std::string& path, const nlohmann::json& record) {
  std::string line = record.dump() + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  // The lock every writer of a results file takes (halox sweep too), so that lines from
  // concurrent writers never interleave, also on file systems where O_APPEND alone does not.
  ::flock(fd, LOCK_EX);
  ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size()))
    throw std::runtime_error(fmt::format("short write to '{}'", path));
}

}  // namespace halox
