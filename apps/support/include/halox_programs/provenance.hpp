// Where a result came from: library versions, hosts, bindings, revision.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>

#include <string>

#include "halox/common/mpi_library.hpp"  // mpi_library_version(), recorded with every result

namespace halox {

inline constexpr int result_schema_version = 1;

// "0-1,4" style list of the CPUs this process may run on.
std::string cpu_binding_string();
std::string git_revision();

// Collective. Includes schema version, MPI library, per-rank host and binding,
// the launcher/transport settings found in the environment, and the revision.
nlohmann::json collect_provenance(MPI_Comm comm);

// Checks on rank 0 that path can be appended to (created if missing) without
// writing anything; collective, throws usage_error everywhere on failure.
void require_appendable(MPI_Comm comm, const std::string& path);

// Appends one JSON object as one line with a single write, so that concurrent
// or interrupted runs never leave half a record.
void append_json_line(const std::string& path, const nlohmann::json& record);

}  // namespace halox
