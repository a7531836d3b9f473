#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "tiletune/compiler.hpp"
#include "tiletune/worker.hpp"

namespace tiletune {

WorkerProcess::WorkerProcess(int gpu) : gpu_(gpu) {}

WorkerProcess::~WorkerProcess() { stop(); }

void WorkerProcess::start() {
  // Requests go down a socket, so that sending to a worker that has died returns EPIPE (send_all) rather
  // than raising SIGPIPE, which would end this process.
  int down[2], up[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, down) != 0 || ::pipe2(up, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create a pipe for the worker: ") + std::strerror(errno));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string("cannot start the measuring worker: ") + std::strerror(errno));
  if (pid == 0) {
    // A fresh program, not a bare fork: CUDA refuses to start in a fork of a process where it (or NVRTC,
    // which may load the driver) already ran.
    ::dup2(down[0], STDIN_FILENO);
    ::dup2(up[1], STDOUT_FILENO);
    const std::string gpu = std::to_string(gpu_);
    ::execl("/proc/self/exe", "tiletune-worker", "--tiletune-worker", gpu.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_child_ = down[1];
  from_child_ = up[0];
  buffer_.clear();
  ++restarts_;
}

std::string WorkerProcess::reap() {
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  if (pid_ <= 0) return "";
  int status = 0;
  // Give it a moment to exit on its own (it closes on fatal errors), then make sure.
  for (int i = 0; i < 50 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i) ::usleep(2000);
  if (::waitpid(pid_, &status, WNOHANG) == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  if (WIFSIGNALED(status)) return std::string("worker killed by signal ") + strsignal(WTERMSIG(status));
  if (WIFEXITED(status)) return "worker exited with status " + std::to_string(WEXITSTATUS(status));
  return "worker ended";
}

namespace {

// Sends all of `text` down the socket; false once the worker is gone (never SIGPIPE).
bool send_all(int fd, const std::string& text) {
  std::size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void WorkerProcess::stop() {
  if (pid_ > 0 && to_child_ >= 0) send_all(to_child_, "{\"op\":\"quit\"}\n");
  reap();
}

WorkerProcess::Reply WorkerProcess::request(const nlohmann::json& message, double timeout_s) {
  if (pid_ <= 0) start();
  Reply reply;
  const std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (!send_all(to_child_, line)) {
    reply.status = Reply::Status::died;
    reply.detail = reap();
    return reply;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      const std::string text = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      try {
        reply.body = nlohmann::json::parse(text);
      } catch (const nlohmann::json::exception&) {
        reply.status = Reply::Status::died;
        reply.detail = "worker sent a malformed reply";
        reap();
        return reply;
      }
      if (reply.body.value("fatal", false)) reap();  // its context is gone; the next request starts afresh
      return reply;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      reply.status = Reply::Status::timeout;
      ::kill(pid_, SIGKILL);
      reap();
      return reply;
    }
    pollfd pfd{from_child_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 200)));
    if (ready < 0 && errno != EINTR) throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      reply.status = Reply::Status::died;
      reply.detail = reap();
      return reply;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace tiletune

namespace tiletune {

int run_child_if_requested(int argc, char** argv) {
  if (argc < 2) return -1;
  const std::string role = argv[1];
  if (role == "--tiletune-worker" && argc == 3) {
    // Ctrl-C, and a SIGTERM sent to the whole process group (`timeout`, a batch scheduler's end of job), are
    // the parent's to handle: it ends the sweep after the measurement in flight and then stops us. Dying of
    // one here, the measurement in flight was stored as the configuration's failure.
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    return worker_main(std::atoi(argv[2]), STDIN_FILENO, STDOUT_FILENO);
  }
  if (role == "--tiletune-compile" && argc == 5)
    return compile_child_main(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  return -1;
}

}  // namespace tiletune
