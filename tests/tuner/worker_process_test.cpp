// The measuring worker as a process, without a GPU: a request it cannot parse is answered without touching
// CUDA, so these tests run anywhere.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <string>

#include "tiletune/worker.hpp"

using namespace tiletune;

namespace {

const nlohmann::json kNoOp = {{"no_op", true}};  // no "op": answered with an error, no GPU touched

// The state letter of /proc/<pid>/stat ('Z' for a worker that died and was not yet reaped).
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const auto paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

}  // namespace

// `timeout`, a batch scheduler's end of job and Ctrl-C signal the whole process group. The sweep ends after
// the measurement in flight and then stops its worker; a worker that died of the signal itself had that
// measurement stored as the configuration's failure ("worker killed by signal Terminated", seen when a main
// job ran into `timeout`).
TEST(WorkerProcess, OutlivesASigtermOrSigintSentToTheWholeGroup) {
  WorkerProcess w(0);
  ASSERT_EQ(w.request(kNoOp, 30).status, Worker::Reply::Status::ok);
  const pid_t pid = w.pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const Worker::Reply reply = w.request(kNoOp, 30);
  EXPECT_EQ(reply.status, Worker::Reply::Status::ok) << reply.detail;
  EXPECT_EQ(w.pid(), pid);
  EXPECT_EQ(w.restarts(), 0);
  EXPECT_NE(process_state(pid), 'Z');
}

// A worker that dies between requests (killed from outside while the sweep fits its model) is a reply that
// says so, and the next request starts a fresh one: sending to it must not raise SIGPIPE, which would end
// the sweep without a word.
TEST(WorkerProcess, OneThatDiedBetweenRequestsIsReportedAndReplaced) {
  WorkerProcess w(0);
  ASSERT_EQ(w.request(kNoOp, 30).status, Worker::Reply::Status::ok);
  const pid_t pid = w.pid();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  for (int i = 0; i < 500 && process_state(pid) != 'Z'; ++i) ::usleep(2000);
  ASSERT_EQ(process_state(pid), 'Z');
  const Worker::Reply died = w.request(kNoOp, 30);
  EXPECT_EQ(died.status, Worker::Reply::Status::died);
  EXPECT_NE(died.detail.find("Killed"), std::string::npos) << died.detail;
  const Worker::Reply next = w.request(kNoOp, 30);
  EXPECT_EQ(next.status, Worker::Reply::Status::ok) << next.detail;
  EXPECT_EQ(w.restarts(), 1);
}
