#include "halox_programs/program.hpp"

#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <regex>
#include <string>
#include <utility>

#include "halox/common/error.hpp"
#include "halox/extend/launcher.hpp"

namespace halox {

std::string in_flag_terms(std::string message) {
  // The library's options and the programs' flags that set them.
  static const std::pair<std::regex, const char*> flags[] = {
      {std::regex(R"(\b(exchange_options::)?ranks_per_node\b)"), "--ranks-per-node"},
      {std::regex(R"(\b(exchange_options::)?timeout_seconds\b)"), "--timeout"},
      {std::regex(R"(\b(exchange_options::)?wisdom_file\b)"), "--wisdom"},
      {std::regex(R"(\bplacement_options::topology\b)"), "--topology"},
      {std::regex(R"(\bplacement_options::binding\b)"), "--assume-binding"},
      {std::regex(R"(\bhw_grids\b)"), "--decomposition hw --node ..."},
      {std::regex(R"(\bmake_cart_decomposition\b)"), "--mpicart"},
      {std::regex(R"(\bfield memory private\b)"), "--memory private"},
      {std::regex(R"(\(transport_entry::make_device\))"), "(marked by --list-transports)"},
  };
  for (const auto& [option, flag] : flags) message = std::regex_replace(message, option, flag);
  return message;
}

void abort_job_after_message() {
  let_launcher_forward_output();
  MPI_Abort(MPI_COMM_WORLD, exit_failure);
  std::_Exit(exit_failure);  // MPI_Abort does not return
}

int run_mpi_program(std::string_view prog, int argc, char** argv,
                    const std::function<int(MPI_Comm)>& body) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = exit_ok;
  try {
    code = body(MPI_COMM_WORLD);
  } catch (const usage_error& e) {
    if (rank == 0) fmt::print(stderr, "{}: error: {}\n", prog, in_flag_terms(e.what()));
    code = exit_usage;
  } catch (const run_error& e) {
    if (rank == 0) fmt::print(stderr, "{}: error: {}\n", prog, e.what());
    code = exit_failure;
  } catch (const timeout_error& e) {
    fmt::print(stderr, "{}: error: {}\n", prog, e.what());
    abort_job_after_message();
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: fatal error on rank {}: {}\n", prog, rank, e.what());
    abort_job_after_message();
  }
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Finalize();
  return code;
}

}  // namespace halox
