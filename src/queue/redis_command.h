// One Redis command in RESP2 wire form: an array of bulk strings, binary-safe (arguments may
// hold any byte, including CR, LF and NUL). Built once, then appended to a connection's output.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace sluice::queue {

class RedisCommand {
 public:
  // `name` is the first argument ("XADD"); more go through arg().
  explicit RedisCommand(std::string_view name);

  RedisCommand& arg(std::string_view a);
  RedisCommand& arg(const char* a) { return arg(std::string_view(a)); }
  RedisCommand& arg(const std::string& a) { return arg(std::string_view(a)); }
  // Integers go as their decimal text (what Redis parses for counts, TTLs and ids).
  template <std::integral I>
  requires(!std::is_same_v<I, char> && !std::is_same_v<I, bool>) RedisCommand& arg(I n) {
    if constexpr (std::is_signed_v<I>) {
      return arg_signed(static_cast<int64_t>(n));
    } else {
      return arg_unsigned(static_cast<uint64_t>(n));
    }
  }

  std::size_t argc() const { return argc_; }
  // The command's name as given (for logs and error messages).
  const std::string& name() const { return name_; }
  // Appends `*argc\r\n` and every `$len\r\narg\r\n` to `out`.
  void append_to(std::string& out) const;
  std::string encoded() const;
  // Wire bytes append_to() writes.
  std::size_t encoded_size() const;

 private:
  RedisCommand& arg_signed(int64_t n);
  RedisCommand& arg_unsigned(uint64_t n);

  std::string name_;
  std::string args_;  // every argument already as $len\r\nbytes\r\n
  std::size_t argc_ = 0;
};

}  // namespace sluice::queue
