// What every halox program does around its work: MPI_Init and MPI_Finalize,
// the exit codes, and the "one line on rank 0, non-zero exit everywhere" rule
// applied to the library's errors.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <string_view>

namespace halox {

// Exit codes shared by all halox programs.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // run failed (e.g. verification)
inline constexpr int exit_usage = 2;    // bad input

// A library message in the programs' words: the options it names
// (ranks_per_node, timeout_seconds, wisdom_file, placement_options::topology
// and ::binding) become the flags that set them (--ranks-per-node, --timeout,
// --wisdom, --topology, --assume-binding).
std::string in_flag_terms(std::string message);

// let_launcher_forward_output(), then MPI_Abort(MPI_COMM_WORLD, exit_failure).
[[noreturn]] void abort_job_after_message();

// Runs body(MPI_COMM_WORLD) between MPI_Init and MPI_Finalize. A usage_error
// or run_error prints "prog: error: what" on rank 0 and returns non-zero on all
// ranks; any other exception aborts the job (a lone rank must not hang others).
int run_mpi_program(std::string_view prog, int argc, char** argv,
                    const std::function<int(MPI_Comm)>& body);

}  // namespace halox
