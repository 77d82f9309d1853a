// The command line tells the truth: the program's name in usage, required
// flags marked, subcommands described by what they do, one exit code per
// kind of failure (README, "Exit codes"), a no-GPU message that says so,
// colours only on a terminal, and --version with the build's options.
#include <filesystem>

#include "runtime/cpu/openmp_wait.h"
#include "runtime/device.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

namespace fs = std::filesystem;

std::string mlp_train_args() {
  std::string m = source_dir() + "/tests/models/mlp";
  return "--model " + m + "/model.onnx --config " + m + "/training.yaml --data " + m +
         "/train_batches --steps 1 --device cpu";
}

// Runs ort_train on a pseudo-terminal (util-linux `script`), as a person at a terminal does.
std::string on_terminal(const std::string& env, const std::string& args, const std::string& dir) {
  CliOutcome o = run_shell("script -qec \"env " + env + " " + ort_train_binary() + " " + args + "\" /dev/null", dir);
  return o.stdout_text;
}

// spdlog colours the info level green; the progress bar's erase-line escape is no colour.
bool has_escape(const std::string& s) { return s.find("\x1b[32m") != std::string::npos; }

}  // namespace

TEST_CASE("cli.help_names_the_program_marks_required_flags_and_describes_train") {
  Dir d("ort_train_cli_help");
  CliOutcome top = run_cli("--help", d.p.string());
  CHECK(top.exit_code == 0);
  CHECK(top.stdout_text.find("Usage: ort_train") != std::string::npos);
  CHECK(top.stdout_text.find("Exit codes:") != std::string::npos);
  CliOutcome train = run_cli("train --help", d.p.string());
  CHECK(train.exit_code == 0);
  CHECK(train.stdout_text.find("ort_train train") != std::string::npos);
  CHECK(train.stdout_text.find("Train a model") != std::string::npos);
  CHECK(train.stdout_text.find("forward ONNX model (REQUIRED") != std::string::npos);
  // train is the default subcommand: the top-level help shows its flags too.
  CHECK(top.stdout_text.find("--optimizer") != std::string::npos);
  CHECK(top.stdout_text.find("--checkpoint-dir") != std::string::npos);
  CHECK(run_cli("-h", d.p.string()).stdout_text == top.stdout_text);
}

// The mistakes people make on the command line: each is one line that says
// what was wrong and what would be right, exit 64 (a bad command line).
TEST_CASE("cli.command_line_mistakes_get_one_guiding_line") {
  Dir d("ort_train_cli_mistakes");
  std::string m = source_dir() + "/tests/models/mlp";
  std::string model = "--model " + m + "/model.onnx --config " + m + "/training.yaml";
  struct Case {
    std::string args, says;
    int code;
  };
  for (const Case& c : {
           Case{model + " --optimzer Lamb", "ort_train: error: unknown option --optimzer (did you mean --optimizer?)", 64},
           Case{model + " --stpes 3 --lr=0.1 --devise cpu",
                "unknown option --stpes (did you mean --steps?); unknown option --devise (did you mean --device?)", 64},
           Case{model + " --zzzzzzzzzzzz", "ort_train: error: unknown option --zzzzzzzzzzzz\n", 64},
           Case{model + " --optimizer Lambb", "ort_train: error: --optimizer: 'Lambb' is not one of: Sgd, Adam, AdamW, Lamb", 64},
           Case{model + " --device gpu", "'gpu' is not cpu or cuda[:i]", 64},
           Case{"--model " + m + "/model.onnx --config " + (d.p / "nope.yaml").string(),
                "model description " + (d.p / "nope.yaml").string() + " does not exist", 1},
           Case{"--model " + m + "/model.onnx --config " + d.p.string(), "is a folder, not a YAML or JSON file", 1},
           // Values: the flag, the value, what is allowed; one line, exit 64.
           Case{model + " --batch-size 0", "ort_train: error: --batch-size: '0' is not a whole number of 1 or more\n", 64},
           Case{model + " --steps -1", "--steps: '-1' is not a whole number of 0 or more", 64},
           Case{model + " --threads 5000", "--threads: '5000' is not a whole number from 0 to 1024", 64},
           Case{model + " --precision fp8", "--precision: 'fp8' is not one of: fp32, bf16, fp16", 64},
           Case{model + " --recompute everything", "--recompute: 'everything' is not one of: none, cheap, layers, auto", 64},
           Case{model + " --lr abc", "ort_train: error: --lr: 'abc' is not a number\n", 64},
           Case{model + " --comm-timeout soon", "--comm-timeout: 'soon' is not a number of 0 or more", 64},
           Case{model + " --log-level loud", "--log-level: 'loud' is not one of: trace, debug, info, warn, error", 64},
           Case{model + " --max-memory lots", "--max-memory: 'lots' is not a size such as 2G, 512M", 64},
           Case{model + " --dim seq=0", "--dim: 'seq=0' is not NAME=SIZE with a positive size", 64},
           Case{model + " --passes constant_folding,nosuch", "--passes: 'nosuch' is not a graph pass (the passes: ", 64},
           Case{model + " --disable-pass nosuch", "--disable-pass: 'nosuch' is not a graph pass", 64},
           // A subcommand's typo: the nearest one.
           Case{"trian " + model, "ort_train: error: unknown command 'trian' (did you mean train?)\n", 64},
           Case{"frobnicate " + model, "unknown command 'frobnicate' (commands: run, train, inspect, plot; train is the default)", 64},
       }) {
    CliOutcome o = run_cli(c.args, d.p.string());
    INFO(c.args << "\n" << o.stderr_text);
    CHECK(o.exit_code == c.code);
    CHECK(o.stderr_text.find(c.says) != std::string::npos);
  }
  // A spelling the description accepts is accepted here too.
  CliOutcome lower = run_cli(model + " --data " + m + "/train_batches --optimizer adamw --steps 1 --device cpu",
                             d.p.string());
  INFO(lower.stderr_text);
  CHECK(lower.exit_code == 0);
  CHECK(lower.stdout_text.find("optimizer AdamW") != std::string::npos);
}

// A pass the user names that runs only in a phase this build leaves out
// (graph/passes/pass.h) is warned about, naming what it needs, whichever
// flag named it; with what it needs given, nothing is said.
TEST_CASE("cli.a_named_pass_this_build_cannot_run_is_warned_about") {
  Dir d("ort_train_cli_named_passes");
  struct Case {
    std::string flags;
    std::string says;  // empty: no such warning
  };
  for (const Case& c : {
           Case{"--passes constant_folding,half_activations",
                "--passes half_activations changes nothing without --precision bf16|fp16"},
           Case{"--enable-pass half_activations", "--enable-pass half_activations changes nothing without --precision"},
           Case{"--enable-pass recompute", "--enable-pass recompute changes nothing without --recompute cheap|layers|auto"},
           Case{"--enable-pass lora_adapters", "--enable-pass lora_adapters changes nothing without LoRA adapters"},
           Case{"--enable-pass half_activations --precision bf16", ""},
           Case{"--enable-pass recompute --recompute cheap", ""},
       }) {
    CliOutcome o = run_cli(mlp_train_args() + " " + c.flags, d.p.string());
    INFO(c.flags << "\n" << o.stdout_text << o.stderr_text);
    CHECK(o.exit_code == 0);
    const std::string all = o.stdout_text + o.stderr_text;
    if (c.says.empty()) CHECK(all.find("changes nothing without") == std::string::npos);
    else CHECK(all.find(c.says) != std::string::npos);
  }
}

// Inside an sbatch script a bare `ort_train` inherits SLURM_NTASKS without
// being one of srun's tasks: it says to start the ranks with srun.
TEST_CASE("cli.a_bare_ort_train_in_a_slurm_batch_script_says_to_use_srun") {
  if (!fs::exists(fs::path(ort_train_binary()).parent_path() / "libort_train_mpi.so"))
    ORT_TRAIN_SKIP("this build has no MPI plugin");
  Dir d("ort_train_cli_sbatch");
  CliOutcome o = run_shell("env SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 " + ort_train_binary() + " " +
                               mlp_train_args(),
                           d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 1);
  CHECK(o.stderr_text.find("start the ranks with `srun --mpi=pmix ort_train") != std::string::npos);
}

// Data but nothing that asks for training: the run says it trained nothing and why.
TEST_CASE("cli.a_run_that_trains_nothing_says_so") {
  Dir d("ort_train_cli_no_training");
  std::string m = source_dir() + "/tests/models/mlp";
  CliOutcome o = run_cli("--model " + m + "/model.onnx --config " + m + "/training.yaml --data " + m +
                             "/train_batches --device cpu",
                         d.p.string());
  INFO(o.stderr_text);
  CHECK(o.exit_code == 0);
  CHECK(o.stdout_text.find("trained nothing: no optimizer, --steps or --epochs was given") != std::string::npos);
}

TEST_CASE("cli.exit_codes_follow_the_table") {
  Dir d("ort_train_cli_exit_codes");
  CHECK(run_cli("--no-such-flag", d.p.string()).exit_code == 64);
  CHECK(run_cli(mlp_train_args() + " --steps -3", d.p.string()).exit_code == 64);
  CliOutcome missing = run_cli("--model " + (d.p / "nope.onnx").string() + " --device cpu", d.p.string());
  CHECK(missing.exit_code == 1);
}

TEST_CASE("cli.no_gpu_is_device_unavailable_and_says_so") {
  if (cuda_available()) ORT_TRAIN_SKIP("a GPU is visible");
  Dir d("ort_train_cli_no_gpu");
  std::string args = mlp_train_args();
  args.replace(args.find("--device cpu"), 12, "--device cuda");
  CliOutcome o = run_cli(args, d.p.string());
  CHECK(o.exit_code == 4);
  INFO(o.stderr_text);
  if (!has_cuda_kernels()) {
    CHECK(o.stderr_text.find("no CUDA plugin") != std::string::npos);
    CHECK(o.stderr_text.find(cuda_plugin_missing_reason()) != std::string::npos);  // why, and how to get it
  }
  else if (!fs::exists("/proc/driver/nvidia/version"))
    CHECK(o.stderr_text.find("this machine has no NVIDIA GPU") != std::string::npos);
  CHECK(o.stderr_text.find("--device cpu") != std::string::npos);
}

TEST_CASE("cli.colours_only_on_a_terminal") {
  Dir d("ort_train_cli_colours");
  std::string args = "--log-level info " + mlp_train_args();
  // Piped (as in a file or a CI log): none, unless asked for.
  CHECK_FALSE(has_escape(run_cli(args, d.p.string()).stdout_text));
  CHECK(has_escape(run_cli("--color always " + args, d.p.string()).stdout_text));
  // On a terminal: colours, except with NO_COLOR, --color never, or under a launcher.
  CHECK(has_escape(on_terminal("", args, d.p.string())));
  CHECK_FALSE(has_escape(on_terminal("NO_COLOR=1", args, d.p.string())));
  CHECK_FALSE(has_escape(on_terminal("", "--color never " + args, d.p.string())));
  CHECK_FALSE(has_escape(on_terminal("OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0",
                                     args, d.p.string())));
}

TEST_CASE("cli.version_prints_the_commit_and_build_options") {
  Dir d("ort_train_cli_version");
  CliOutcome o = run_cli("--version", d.p.string());
  CHECK(o.exit_code == 0);
  for (const char* want : {"ort_train 0.", "(commit ", "CUDA:", "cuDNN:", "NCCL:", "MPI:", "BLAS:"}) {
    INFO(want << " in\n" << o.stdout_text);
    CHECK(o.stdout_text.find(want) != std::string::npos);
  }
}

// Idle kernel threads spin a bounded time, then sleep (runtime/cpu/openmp_wait.h),
// set before the OpenMP runtime reads its settings; a user's setting wins.
TEST_CASE("cli.idle_threads_spin_briefly_unless_the_environment_says_otherwise") {
  Dir d("ort_train_cli_wait");
  // The suite's own binary set GOMP_SPINCOUNT, which its children inherit: unset it.
  std::string bare = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + ort_train_binary() + " --version";
  CliOutcome ours = run_shell(bare, d.p.string());
  CHECK(ours.exit_code == 0);
  CHECK(ours.stdout_text.find(std::string("idle threads: spin ") + kOpenMpSpinCount +
                              " times, then sleep (GOMP_SPINCOUNT, ort_train's default)") != std::string::npos);
  CliOutcome theirs = run_shell("env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active " + ort_train_binary() + " --version",
                                d.p.string());
  CHECK(theirs.stdout_text.find("idle threads: OMP_WAIT_POLICY=active (from the environment)") != std::string::npos);
}

}  // namespace ort_train::testing

namespace ort_train::testing {

TEST_CASE("cli.synthetic_data_takes_every_symbolic_dim_from_dim_flags") {
  Dir d("ort_train_cli_dims");
  std::string m = source_dir() + "/tests/models/bert";
  std::string args = "--model " + m + "/model.onnx --config " + m + "/training.yaml --data synthetic --batch-size 2 "
                     "--steps 1 --device cpu";
  // Without --dim seq: the position table's rows (64), said (training/synthetic_dims.h).
  CliOutcome without = run_cli(args, d.p.string());
  INFO(without.stdout_text << without.stderr_text);
  CHECK(without.exit_code == 0);
  CHECK(without.stdout_text.find("synthetic data: seq 64 (the position table pos.weight has 64 rows; --dim seq=N "
                                 "sets it)") != std::string::npos);
  CliOutcome with = run_cli(args + " --dim seq=8", d.p.string());
  INFO(with.stderr_text);
  CHECK(with.exit_code == 0);
  CHECK(with.stdout_text.find("synthetic data: seq") == std::string::npos);
  CliOutcome bad = run_cli(args + " --dim seq", d.p.string());
  CHECK(bad.exit_code == 64);
  CHECK(bad.stderr_text.find("--dim: 'seq' is not NAME=SIZE with a positive size, e.g. --dim seq=128") !=
        std::string::npos);
}

// The README's headline command, with nothing but the model: no round trips
// for --batch-size and --dim seq=N (issue 51).
TEST_CASE("cli.the_headline_command_needs_no_sizes") {
  Dir d("ort_train_cli_headline");
  CliOutcome o = run_cli("--model " + source_dir() + "/examples/bert/bert.onnx --optimizer Lamb --lr 1e-4 --steps 2 "
                         "--device cpu --threads 1",
                         d.p.string());
  INFO(o.stdout_text << o.stderr_text);
  CHECK(o.exit_code == 0);
  CHECK(o.stdout_text.find("synthetic data: batch 8 (the default batch; --batch-size N sets it)") != std::string::npos);
  CHECK(o.stdout_text.find("synthetic data: seq 64 (the position table "
                           "model.bert.embeddings.position_embeddings.weight has 64 rows") != std::string::npos);
}

}  // namespace ort_train::testing

namespace ort_train::testing {

TEST_CASE("cli.without_a_driver_the_default_device_does_not_load_the_cuda_plugin") {
  if (std::filesystem::exists("/proc/driver/nvidia/version") || std::filesystem::exists("/dev/nvidiactl"))
    ORT_TRAIN_SKIP("an NVIDIA driver is loaded here");
  Dir d("ort_train_cli_no_plugin");
  std::string m = source_dir() + "/tests/models/mlp";
  // The dynamic loader names every library it opens (LD_DEBUG=files, on stderr).
  CliOutcome o = run_shell("LD_DEBUG=files " + ort_train_binary() + " --model " + m + "/model.onnx --config " + m +
                               "/training.yaml --data " + m + "/train_batches --steps 1",
                           d.p.string());
  CHECK(o.exit_code == 0);
  CHECK(o.stdout_text.find("device cpu") != std::string::npos);
  CHECK(o.stderr_text.find("libort_train_cuda") == std::string::npos);
  CHECK(o.stderr_text.find("libcublas") == std::string::npos);
}

}  // namespace ort_train::testing

namespace ort_train::testing {

// Runs the generated completion function on a command line, as bash does at <TAB>.
std::string complete(const std::string& line, const std::string& dir) {
  std::string script = dir + "/completion.bash";
  REQUIRE(run_cli("--bash-completion > " + script, dir).exit_code == 0);
  std::string words = "(" + line + ")";
  CliOutcome o = run_shell("bash -c 'source " + script + "; COMP_WORDS=" + words +
                               "; COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ort_train; echo \"${COMPREPLY[*]}\"'",
                           dir);
  return o.stdout_text;
}

TEST_CASE("cli.bash_completion_completes_subcommands_flags_and_values") {
  Dir d("ort_train_cli_completion");
  CHECK(complete("ort_train tr", d.p.string()).find("train") != std::string::npos);
  std::string flags = complete("ort_train train --opt", d.p.string());
  CHECK(flags.find("--optimizer") != std::string::npos);
  CHECK(complete("ort_train inspect --di", d.p.string()).find("--dim") != std::string::npos);
  CHECK(complete("ort_train inspect --opt", d.p.string()).find("--optimizer") == std::string::npos);
  CHECK(complete("ort_train --optimizer La", d.p.string()).find("Lamb") != std::string::npos);
  CHECK(complete("ort_train --device \"\"", d.p.string()).find("cuda") != std::string::npos);
}

TEST_CASE("cli.man_page_is_made_from_every_subcommand_help") {
  // help2man writes it next to the binary (CMake target ort_train_man).
  const std::string page = ort_train_binary().substr(0, ort_train_binary().rfind('/')) + "/ort_train.1";
  if (!std::filesystem::exists(page)) ORT_TRAIN_SKIP("no " << page << " (help2man is not installed)");
  std::string text = *read_file(page);
  for (const char* want : {".SH NAME", "ort_train \\- train and run ONNX models", "Train a model", "\\-\\-optimizer",
                           "\\-\\-dim", "Exit codes"}) {
    INFO(want);
    CHECK(text.find(want) != std::string::npos);
  }
}

}  // namespace ort_train::testing
