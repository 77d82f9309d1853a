// The job communicator without a launcher, and the launcher environment parsing.
#include <cstdlib>

#include "runtime/communicator.h"
#include "test_util.h"

namespace ort_train::testing {

TEST_CASE("without a launcher the job is one process and MPI is not started", "[communicator]") {
  LaunchInfo info = launch_info_from_environment();
  if (info.size > 1) ORT_TRAIN_SKIP("this test binary was itself started by a launcher");
  auto comm = job_communicator();
  REQUIRE(comm.ok());
  CHECK((*comm)->size() == 1);
  CHECK((*comm)->rank() == 0);
  CHECK((*comm)->backend() == "single process");
  Tensor t = make<float>({2}, {1.5f, -2.f});
  REQUIRE((*comm)->allreduce_sum(t).ok());  // a sum over one rank leaves it as it is
  CHECK(t.data<float>()[0] == 1.5f);
}

TEST_CASE("launch info comes from Open MPI's, PMI's or Slurm's variables", "[communicator]") {
  const char* saved[] = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_RANK",
                         "PMIX_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                         "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"};
  std::map<std::string, std::string> before;
  for (const char* v : saved)
    if (const char* x = std::getenv(v)) before[v] = x;
  for (const char* v : saved) ::unsetenv(v);
  CHECK(launch_info_from_environment().size == 1);
  ::setenv("SLURM_PROCID", "5", 1);
  ::setenv("SLURM_NTASKS", "8", 1);
  ::setenv("SLURM_LOCALID", "1", 1);
  LaunchInfo s = launch_info_from_environment();
  CHECK(s.rank == 5);
  CHECK(s.size == 8);
  CHECK(s.local_rank == 1);
  CHECK(s.local_size == 1);  // not given: the node's cores are this rank's alone
  CHECK(s.launcher == "srun");
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);  // mpirun's variables win over Slurm's
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  LaunchInfo o = launch_info_from_environment();
  CHECK(o.rank == 2);
  CHECK(o.size == 3);
  CHECK(o.local_rank == 2);  // no local rank given: the rank
  CHECK(o.launcher == "mpirun");
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);  // three ranks share this node's cores
  CHECK(launch_info_from_environment().local_size == 3);
  for (const char* v : saved) ::unsetenv(v);
  for (const auto& [k, v] : before) ::setenv(k.c_str(), v.c_str(), 1);
}

}  // namespace ort_train::testing
