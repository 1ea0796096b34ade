#include "src/queue/resp_value.h"

#include <cstdio>

namespace sluice::queue {

RespValue RespValue::simple(std::string s) {
  RespValue v;
  v.type_ = Type::SimpleString;
  v.str_ = std::move(s);
  return v;
}

RespValue RespValue::error(std::string message) {
  RespValue v;
  v.type_ = Type::Error;
  v.str_ = std::move(message);
  return v;
}

RespValue RespValue::integer(int64_t n) {
  RespValue v;
  v.type_ = Type::Integer;
  v.integer_ = n;
  return v;
}

RespValue RespValue::bulk(std::string s) {
  RespValue v;
  v.type_ = Type::BulkString;
  v.str_ = std::move(s);
  return v;
}

RespValue RespValue::array(std::vector<RespValue> elements) {
  RespValue v;
  v.type_ = Type::Array;
  v.elements_ = std::move(elements);
  return v;
}

std::string RespValue::to_resp() const {
  std::string out;
  append_resp(out);
  return out;
}

void RespValue::append_resp(std::string& out) const {
  switch (type_) {
    case Type::SimpleString:
      out += '+';
      out += str_;
      out += "\r\n";
      break;
    case Type::Error:
      out += '-';
      out += str_;
      out += "\r\n";
      break;
    case Type::Integer:
      out += ':';
      out += std::to_string(integer_);
      out += "\r\n";
      break;
    case Type::BulkString:
      out += '$';
      out += std::to_string(str_.size());
      out += "\r\n";
      out += str_;
      out += "\r\n";
      break;
    case Type::Array:
      out += '*';
      out += std::to_string(elements_.size());
      out += "\r\n";
      for (const RespValue& e : elements_) e.append_resp(out);
      break;
    case Type::Null:
      out += "$-1\r\n";
      break;
  }
}

std::string RespValue::debug_string() const {
  std::string out;
  append_debug(out);
  return out;
}

void RespValue::append_debug(std::string& out) const {
  switch (type_) {
    case Type::SimpleString:
      out += str_;
      break;
    case Type::Error:
      out += "(error) ";
      out += str_;
      break;
    case Type::Integer:
      out += std::to_string(integer_);
      break;
    case Type::BulkString:
      out += '"';
      for (const char c : str_) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
          out += '\\';
          out += c;
        } else if (u >= 0x20 && u < 0x7f) {
          out += c;
        } else {
          char hex[8];
          std::snprintf(hex, sizeof(hex), "\\x%02x", u);
          out += hex;
        }
      }
      out += '"';
      break;
    case Type::Array:
      out += '[';
      for (std::size_t i = 0; i < elements_.size(); ++i) {
        if (i > 0) out += ", ";
        elements_[i].append_debug(out);
      }
      out += ']';
      break;
    case Type::Null:
      out += "nil";
      break;
  }
}

const char* resp_type_name(RespValue::Type type) {
  switch (type) {
    case RespValue::Type::SimpleString:
      return "simple string";
    case RespValue::Type::Error:
      return "error";
    case RespValue::Type::Integer:
      return "integer";
    case RespValue::Type::BulkString:
      return "bulk string";
    case RespValue::Type::Array:
      return "array";
    case RespValue::Type::Null:
      return "null";
  }
  return "?";
}

}  // namespace sluice::queue
