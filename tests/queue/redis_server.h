// A real redis-server for tests: started on a free loopback port, without persistence, and
// killed when the object goes (or the test process dies: PR_SET_PDEATHSIG). stop() + start()
// restart it on the same port, as a Redis restart looks to its clients.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/queue/resp_value.h"

namespace sluice::queue {

class RedisServer {
 public:
  // Starts the server; throws std::runtime_error if it cannot (redis-server is installed by
  // scripts/setup.sh: a missing binary is a failure, never a skip).
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts it again on the same port (after stop() or kill()); returns once it answers PING.
  void start();
  // SIGTERM (Redis closes every client connection) and waits for the exit.
  void stop();
  // SIGKILL: the kernel closes the sockets, Redis says nothing.
  void kill();
  bool running() const { return pid_ > 0; }
  uint16_t port() const { return port_; }

  // Runs one command on a fresh blocking connection and returns the reply (for test setup and
  // for checking state independently of the code under test). Throws on connection failure.
  RespValue command(const std::vector<std::string>& args) const;

 private:
  bool launch();  // false: it exited (port taken) or did not answer in time
  void wait_exit(int signal);

  std::string dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace sluice::queue
