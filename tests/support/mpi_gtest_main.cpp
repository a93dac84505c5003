// GoogleTest main for MPI: every rank runs the tests, only rank 0 prints, and
// the exit code is the same on every rank (failed anywhere = failed).
#include <gtest/gtest.h>
#include <mpi.h>

namespace {
// Makes a failing assertion on any rank fail the test on all ranks.
class agree_listener : public testing::EmptyTestEventListener {
  void OnTestEnd(const testing::TestInfo& info) override {
    int failed = info.result()->Failed() ? 1 : 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && !failed) ADD_FAILURE() << "failed on another rank";
  }
};
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new agree_listener);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
