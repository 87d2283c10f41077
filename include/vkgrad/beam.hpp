// Public: BEAM search control — each kernel's optimization list chosen by timing candidates on
// the device itself, and the cache of winners on disk that every later process reads.
//
// The environment sets the defaults, read once: BEAM=N searches each newly compiled kernel with
// a beam of N (0 or unset: none), VKGRAD_IGNORE_BEAM_CACHE=1 stops reading cached winners (a
// search still writes its winner). A vkgrad::Beam object overrides both while it is alive, in
// the whole process (the innermost one wins).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace vkgrad {

struct BeamOptions {
  int width = 0;          // candidates kept per round; 0: no search
  bool use_cache = true;  // read cached winners (a kernel found there is not searched)
  bool progress = false;  // print a line per kernel searched (stderr; updating on a terminal)
  // The searches' time budget in seconds of wall time from the first search under these options
  // (0: none). Once it is spent, the search under way ends after its current round with the
  // fastest list it confirmed so far (checked like any winner), and kernels compiled later take
  // their cached lists or the heuristics' without a search.
  double seconds = 0;
};

// Kernels compiled while it is alive use `options`. Kernels compiled before keep their code, so
// the in-process kernel caches are emptied when it starts and when it ends (the next realize of
// a graph compiles its kernels again, from the disk caches where they are there).
class Beam {
 public:
  explicit Beam(BeamOptions options);
  ~Beam();
  Beam(const Beam&) = delete;
  Beam& operator=(const Beam&) = delete;

 private:
  std::optional<BeamOptions> saved_;  // the override it replaced
};

// The options kernels compile with now: the innermost live Beam's, else the environment's.
// `BeamOptions o = beam_options(); o.width = 0; Beam quiet(o);` stops searching and leaves
// the rest as it was.
BeamOptions beam_options();

// One kernel a search tuned in this process.
struct TunedKernel {
  std::string name;              // as Tensor::schedule() and DEBUG output name it
  std::string device;            // "CPU", "VULKAN:0"
  std::string opts;              // the winner, "[UPCAST(1, 4), UNROLL(0, 8)]"
  std::string heuristic_opts;    // the heuristics' list
  double seconds = 0;            // the winner's device time in the search
  double heuristic_seconds = 0;  // the heuristics' kernel's
  int tried = 0;                 // candidates timed
  double search_seconds = 0;     // wall time of the search
  // Per launch, among the model's other kernels (the schedule chose among the search's fastest
  // lists by these); 0 where the kernel did not run there (it has variables).
  double schedule_seconds = 0;
  double schedule_heuristic_seconds = 0;
};
// Every kernel searched in this process so far, in order.
std::vector<TunedKernel> tuned_kernels();

}  // namespace vkgrad
