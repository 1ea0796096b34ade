// One RESP2 reply as Redis sent it: a tree of simple strings, errors, integers, bulk strings,
// arrays and nulls. Produced by RespParser; read by the typed helpers in redis_replies.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::queue {

class RespValue {
 public:
  // RESP2 has two nulls ($-1 and *-1); both mean "no value" and are one type here.
  enum class Type { SimpleString, Error, Integer, BulkString, Array, Null };

  RespValue() = default;  // Null
  static RespValue simple(std::string s);
  static RespValue error(std::string message);
  static RespValue integer(int64_t n);
  static RespValue bulk(std::string s);
  static RespValue array(std::vector<RespValue> elements);
  static RespValue null() { return {}; }

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_error() const { return type_ == Type::Error; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_integer() const { return type_ == Type::Integer; }
  // A bulk or simple string (Redis answers some commands with either).
  bool is_string() const { return type_ == Type::BulkString || type_ == Type::SimpleString; }

  // The bytes of a string or the message of an error (empty for other types).
  const std::string& str() const { return str_; }
  std::string& mutable_str() { return str_; }
  int64_t integer() const { return integer_; }
  const std::vector<RespValue>& elements() const { return elements_; }
  std::vector<RespValue>& mutable_elements() { return elements_; }

  // The value in RESP2 wire form (what a server would send); for tests and fake servers.
  std::string to_resp() const;
  // A short human-readable form for logs and test failures: "[\"a\", 1, nil]".
  std::string debug_string() const;

  friend bool operator==(const RespValue&, const RespValue&) = default;

 private:
  void append_resp(std::string& out) const;
  void append_debug(std::string& out) const;

  Type type_ = Type::Null;
  std::string str_;
  int64_t integer_ = 0;
  std::vector<RespValue> elements_;
};

const char* resp_type_name(RespValue::Type type);

}  // namespace sluice::queue
