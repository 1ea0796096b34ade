#include "src/queue/redis_command.h"

#include <charconv>

namespace sluice::queue {

namespace {

std::size_t decimal_digits(std::size_t n) {
  std::size_t d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

template <typename Int>
std::string_view to_chars(char (&buf)[24], Int n) {
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n);
  (void)ec;  // 24 bytes hold any 64-bit integer
  return {buf, static_cast<std::size_t>(end - buf)};
}

}  // namespace

RedisCommand::RedisCommand(std::string_view name) : name_(name) { arg(name); }

RedisCommand& RedisCommand::arg(std::string_view a) {
  char len[24];
  args_ += '$';
  args_ += to_chars(len, a.size());
  args_ += "\r\n";
  args_.append(a.data(), a.size());
  args_ += "\r\n";
  ++argc_;
  return *this;
}

RedisCommand& RedisCommand::arg_signed(int64_t n) {
  char buf[24];
  return arg(to_chars(buf, n));
}

RedisCommand& RedisCommand::arg_unsigned(uint64_t n) {
  char buf[24];
  return arg(to_chars(buf, n));
}

void RedisCommand::append_to(std::string& out) const {
  char count[24];
  out += '*';
  out += to_chars(count, argc_);
  out += "\r\n";
  out += args_;
}

std::string RedisCommand::encoded() const {
  std::string out;
  out.reserve(encoded_size());
  append_to(out);
  return out;
}

std::size_t RedisCommand::encoded_size() const { return 3 + decimal_digits(argc_) + args_.size(); }

}  // namespace sluice::queue
