// The measuring worker's loop: the child process that owns the CUDA context (see worker.hpp for the parent's
// side). It reads one JSON request per line and answers each with one line.
#pragma once

namespace tiletune {

// Runs the worker loop on stdin/stdout-like descriptors until "quit" or end of input. Returns an exit code.
int worker_main(int gpu, int in_fd, int out_fd);

}  // namespace tiletune
