#include "tests/queue/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "src/queue/redis_command.h"
#include "src/queue/resp_parser.h"

namespace sluice::queue {

namespace {

// A port nobody listens on right now: bind to 0, read it, close. Another process may take it
// before redis-server binds it; launch() then fails and start() tries another.
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket()");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind()");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

int connect_to(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// One command over a blocking socket; false on any I/O or protocol failure.
bool round_trip(int fd, const std::vector<std::string>& args, RespValue& reply) {
  RedisCommand cmd(args.at(0));
  for (std::size_t i = 1; i < args.size(); ++i) cmd.arg(args[i]);
  const std::string out = cmd.encoded();
  std::size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  RespParser parser;
  char buf[16384];
  for (;;) {
    const RespParser::Status s = parser.next(reply);
    if (s == RespParser::Status::Value) return true;
    if (s == RespParser::Status::Error) return false;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    parser.feed(std::string_view(buf, static_cast<std::size_t>(n)));
  }
}

// Resolved before fork(): the child of a process with threads (Asio's resolver has one) should
// do no more than async-signal-safe calls before exec.
std::string redis_server_path() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/redis-server";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  throw std::runtime_error("redis-server not found in PATH: run scripts/setup.sh test");
}

}  // namespace

RedisServer::RedisServer() {
  char tmpl[] = "/tmp/sluice-redis-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_port();
    if (launch()) return;
  }
  std::filesystem::remove_all(dir_);
  throw std::runtime_error("redis-server did not start (see scripts/setup.sh test)");
}

RedisServer::~RedisServer() {
  if (pid_ > 0) kill();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void RedisServer::start() {
  if (pid_ > 0) return;
  // The port was just released by our own server; retry briefly in case the kernel is slow.
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (launch()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("redis-server did not restart on port " + std::to_string(port_));
}

bool RedisServer::launch() {
  const std::string port = std::to_string(port_);
  const std::string log = dir_ + "/redis.log";
  const std::string binary = redis_server_path();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Die with the test process, whatever kills it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    ::execl(binary.c_str(), "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save",
            "", "--appendonly", "no", "--dir", dir_.c_str(), "--daemonize", "no",
            "--enable-debug-command", "local", "--loglevel", "warning",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;  // exited: most likely the port was taken
      return false;
    }
    const int fd = connect_to(port_);
    if (fd >= 0) {
      RespValue reply;
      const bool ok = round_trip(fd, {"PING"}, reply);
      ::close(fd);
      if (ok && reply.str() == "PONG") return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill();
  return false;
}

void RedisServer::wait_exit(int signal) {
  ::kill(pid_, signal);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) != pid_) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  pid_ = -1;
}

void RedisServer::stop() {
  if (pid_ > 0) wait_exit(SIGTERM);
}

void RedisServer::kill() {
  if (pid_ > 0) wait_exit(SIGKILL);
}

RespValue RedisServer::command(const std::vector<std::string>& args) const {
  const int fd = connect_to(port_);
  if (fd < 0) throw std::runtime_error("cannot connect to redis-server");
  RespValue reply;
  const bool ok = round_trip(fd, args, reply);
  ::close(fd);
  if (!ok) throw std::runtime_error("redis-server did not answer " + args.at(0));
  return reply;
}

}  // namespace sluice::queue
