// What halox's programs (and the library's own timeout) do before a job is torn
// down: not for a stencil code, which ends its job as it likes.
#pragma once

namespace halox {

// Flushes stdout and stderr and waits until the launcher has had time to
// forward them: a job about to be torn down (MPI_Abort after a timeout_error)
// must not lose its last words.
void let_launcher_forward_output();

}  // namespace halox
