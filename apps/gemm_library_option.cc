// --gemm-library (train and run): which library multiplies the CPU's float32
// GEMMs (runtime/cpu/gemm_backend.h). One option so both commands say and
// accept the same.
#include "apps/commands.h"
#include "apps/option_checks.h"

namespace ort_train::app {

void add_gemm_library_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--gemm-library", value,
                  "the CPU's float32 GEMMs (MatMul, Gemm, Conv): openblas (default), onednn, or measured (each shape "
                  "timed at its first run, Conv also against oneDNN's own convolution, and the fastest kept, as "
                  "--kernel-choices keeps it)")
      ->check(one_of({"openblas", "onednn", "measured"}));
}

}  // namespace ort_train::app
