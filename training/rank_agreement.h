// The ranks of one job must run the same training: the same model and
// optimizer, the same steps, buckets and ZeRO stage, so that every rank makes
// the same collectives in the same order. A rank started with other flags
// used to wait in a collective the others never make, until --comm-timeout.
// Before the run's first collective, every rank compares its settings with
// rank 0's; all ranks stop at once when any differs, the differing ones
// naming what differs, and rank 0 naming it for all of them.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "graph/status.h"
#include "runtime/communicator.h"

namespace ort_train {

// `settings` by name (the training fingerprint and the run's flags). A
// collective: every rank of `comm` must call it.
Status check_ranks_agree(Communicator& comm, const std::map<std::string, std::string>& settings);

// Rank 0's `mine`, on every rank (a collective; one rank: `mine`).
Result<std::map<std::string, std::string>> rank0_settings(Communicator& comm,
                                                          const std::map<std::string, std::string>& mine);

// Every rank's `mine`, in rank order, on every rank (a collective).
Result<std::vector<std::string>> every_ranks_text(Communicator& comm, const std::string& mine);

// Every rank's value of a figure, in rank order, for rank 0's log line:
// "; ranks 0-2: 1.0, 1.5, 1.0 MiB", or "" with one rank. A collective.
Result<std::string> every_rank(Communicator& comm, double mine, const char* unit, int decimals);

}  // namespace ort_train
