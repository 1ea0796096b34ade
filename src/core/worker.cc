#include "src/core/worker.h"

#include <pthread.h>

#include <string>

#include "src/stats/shard.h"

namespace sluice {

Worker::Worker(uint32_t index) : index_(index), dispatcher_(io_, index) {}

Worker::~Worker() { stop(); }

void Worker::start() {
  guard_.emplace(io_.get_executor());
  thread_ = std::thread([this] {
    const std::string name = "sluice-w" + std::to_string(index_);
    pthread_setname_np(pthread_self(), name.c_str());
    stats::set_thread_shard(1 + index_);
    io_.run();
  });
}

void Worker::stop() {
  guard_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace sluice
