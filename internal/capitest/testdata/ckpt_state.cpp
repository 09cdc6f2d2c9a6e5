// ckpt_state: a C++ application checkpointing through the SCR API with
// std::string names and fstream files, as C++ codes written for SCR do.
//
// Each rank evolves a vector of doubles for --steps steps and asks
// SCR_Need_checkpoint after every step (set SCR_CHECKPOINT_INTERVAL),
// writing "state.<step>/rank_<r>.txt" as text at full precision. With
// --crash-at S rank 0 aborts the job after step S, as a failure would;
// the next run restarts from the newest checkpoint, must name the step it
// expects (--expect-restart), and at the end every rank compares its state
// with one computed from scratch: any difference is an exit status of 1.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "scr.h"

namespace {

int rank = 0, ranks = 1;

struct State {
  int step = 0;
  std::vector<double> values;

  explicit State(int r) : values(257 + 31 * r) {
    for (size_t i = 0; i < values.size(); i++) values[i] = r + i / 7.0;
  }

  // advance is one step of a deterministic, chaotic-enough update: any
  // lost or wrong value shows at the end.
  void advance() {
    step++;
    double carry = step * 0.5;
    for (auto& v : values) {
      v = v * 0.999 + carry;
      carry = v * 1e-3 - static_cast<int>(v * 1e-3);
    }
  }

  void save(const std::string& path) const {
    std::ofstream out(path);
    out.exceptions(std::ios::failbit | std::ios::badbit);
    out << "step " << step << " rank " << rank << " n " << values.size() << "\n";
    out << std::hexfloat;
    for (double v : values) out << v << "\n";
  }

  // load reads a checkpoint written by save and reports whether it is
  // whole and this rank's.
  bool load(const std::string& path) {
    std::ifstream in(path);
    std::string w1, w2, w3;
    int s = -1, r = -1;
    size_t n = 0;
    if (!(in >> w1 >> s >> w2 >> r >> w3 >> n) || w1 != "step" || w2 != "rank" || w3 != "n" || r != rank ||
        n != values.size()) {
      std::fprintf(stderr, "rank %d: %s: a bad header\n", rank, path.c_str());
      return false;
    }
    std::vector<double> got(n);
    for (auto& v : got) {
      std::string text;
      if (!(in >> text)) {
        std::fprintf(stderr, "rank %d: %s: short\n", rank, path.c_str());
        return false;
      }
      v = std::strtod(text.c_str(), nullptr);
    }
    step = s;
    values = got;
    return true;
  }
};

void check(int rc, const char* call) {
  if (rc != SCR_SUCCESS) throw std::runtime_error(std::string(call) + " failed");
}

std::string file_of(const std::string& dataset) {
  return dataset + "/rank_" + std::to_string(rank) + ".txt";
}

// restart runs SCR's restart loop and returns the step restored, or 0.
int restart(State& state) {
  for (;;) {
    int have = 0;
    char name[SCR_MAX_FILENAME];
    check(SCR_Have_restart(&have, name), "SCR_Have_restart");
    if (!have) return 0;
    check(SCR_Start_restart(name), "SCR_Start_restart");
    char path[SCR_MAX_FILENAME];
    bool valid = SCR_Route_file(file_of(name).c_str(), path) == SCR_SUCCESS && state.load(path);
    if (SCR_Complete_restart(valid) == SCR_SUCCESS) return state.step;
    state = State(rank);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int steps = 20, crash_at = -1, expect = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string opt = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (opt == "--steps") steps = v;
    else if (opt == "--crash-at") crash_at = v;
    else if (opt == "--expect-restart") expect = v;
  }

  int bad = 0;
  try {
    check(SCR_Init(), "SCR_Init");
    State state(rank);
    int from = restart(state);
    if (rank == 0) std::printf("restarted at step %d\n", from);
    if (expect >= 0 && from != expect) {
      std::fprintf(stderr, "rank %d: restarted at step %d, want %d\n", rank, from, expect);
      bad = 1;
    }
    int checkpoints = 0;
    while (state.step < steps) {
      state.advance();
      int need = 0;
      check(SCR_Need_checkpoint(&need), "SCR_Need_checkpoint");
      if (need) {
        std::string name = "state." + std::to_string(state.step);
        check(SCR_Start_output(name.c_str(), SCR_FLAG_CHECKPOINT), "SCR_Start_output");
        char path[SCR_MAX_FILENAME];
        bool valid = false;
        if (SCR_Route_file(file_of(name).c_str(), path) == SCR_SUCCESS) {
          try {
            state.save(path);
            valid = true;
          } catch (const std::exception& e) {
            std::fprintf(stderr, "rank %d: writing %s: %s\n", rank, path, e.what());
          }
        }
        check(SCR_Complete_output(valid), "SCR_Complete_output");
        checkpoints++;
      }
      if (state.step == crash_at) {
        if (rank == 0) std::printf("crashing after step %d\n", state.step);
        std::fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 42);
      }
    }
    if (rank == 0) std::printf("%d checkpoints\n", checkpoints);

    State fresh(rank);
    while (fresh.step < steps) fresh.advance();
    if (std::memcmp(fresh.values.data(), state.values.data(), fresh.values.size() * sizeof(double)) != 0) {
      std::fprintf(stderr, "rank %d: the state after %d steps differs from one computed from scratch\n", rank, steps);
      bad = 1;
    }
    check(SCR_Finalize(), "SCR_Finalize");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    bad = 1;
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (rank == 0) std::printf(any ? "ckpt_state: FAILED\n" : "ckpt_state: OK\n");
  MPI_Finalize();
  return any;
}
