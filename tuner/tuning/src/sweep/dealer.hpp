// The dealing stage of a sweep: the walkers' picks go to idle lanes (with what each walker asks for next
// compiled together) and what the lanes finish is recorded, until the walkers are spent, or the caller stops
// the dealing (a time limit, an interrupt, an error).
#pragma once

#include <functional>
#include <vector>

#include "candidates.hpp"
#include "lanes.hpp"
#include "recorder.hpp"
#include "search.hpp"

namespace tiletune::sweep {

class Dealer {
 public:
  Dealer(Search& search, Candidates& candidates, Lanes& lanes, Recorder& recorder,
         const SweepOptions& options);

  // keep_dealing: asked before each round; false stops the dealing (what is in flight is still recorded).
  // recorded: after each configuration is stored, with whether it is the new best. Rethrows the first
  // exception a lane threw, once every lane is idle.
  void run(const std::function<bool()>& keep_dealing,
           const std::function<void(const LaneResult&, bool)>& recorded);

 private:
  void deal(std::size_t k);
  // Compiles the picks in flight and what each walker asks for next, interleaved, so that every lane's next
  // CUBIN comes early.
  void prefetch(std::size_t k, std::size_t job, Strategy& walker);

  Search& search_;
  Candidates& candidates_;
  Lanes& lanes_;
  Recorder& recorder_;
  const SweepOptions& options_;
  std::vector<std::vector<std::size_t>> ahead_;  // per lane: the jobs its walker will likely ask for next
};

}  // namespace tiletune::sweep
