#include "src/queue/resp_parser.h"

#include <charconv>
#include <cstdio>
#include <cstring>

namespace sluice::queue {

namespace {

// A whole line as a signed decimal (integers and lengths): optional '-', digits, no overflow.
bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

}  // namespace

RespParser::RespParser(RespLimits limits) : limits_(limits) {}

void RespParser::feed(std::string_view bytes) {
  if (!error_.empty()) return;  // nothing after a protocol error can be trusted
  buf_.append(bytes.data(), bytes.size());
}

void RespParser::reset() {
  buf_.clear();
  pos_ = 0;
  scan_ = 0;
  in_bulk_ = false;
  bulk_len_ = 0;
  stack_.clear();
  reply_bytes_ = 0;
  reply_values_ = 0;
  error_.clear();
}

RespParser::Status RespParser::fail(std::string message) {
  error_ = std::move(message);
  buf_.clear();
  pos_ = 0;
  scan_ = 0;
  stack_.clear();
  return Status::Error;
}

bool RespParser::account(std::size_t bytes, std::size_t values) {
  reply_bytes_ += bytes;
  reply_values_ += values;
  return reply_bytes_ <= limits_.max_reply_bytes && reply_values_ <= limits_.max_reply_elements;
}

void RespParser::compact() {
  if (pos_ == 0) return;
  if (pos_ == buf_.size()) {
    buf_.clear();
  } else {
    buf_.erase(0, pos_);
  }
  scan_ -= std::min(scan_, pos_);
  pos_ = 0;
}

bool RespParser::emit(RespValue value, RespValue& out) {
  while (!stack_.empty()) {
    Frame& top = stack_.back();
    top.array.mutable_elements().push_back(std::move(value));
    if (--top.remaining > 0) return false;
    value = std::move(top.array);
    stack_.pop_back();
  }
  out = std::move(value);
  reply_bytes_ = 0;
  reply_values_ = 0;
  return true;
}

RespParser::Status RespParser::next(RespValue& out) {
  if (!error_.empty()) return Status::Error;
  for (;;) {
    if (in_bulk_) {
      if (buf_.size() - pos_ < bulk_len_ + 2) {
        compact();
        return Status::NeedMore;
      }
      if (buf_[pos_ + bulk_len_] != '\r' || buf_[pos_ + bulk_len_ + 1] != '\n') {
        return fail("bulk string not terminated by CRLF");
      }
      RespValue v = RespValue::bulk(buf_.substr(pos_, bulk_len_));
      pos_ += bulk_len_ + 2;
      scan_ = pos_;
      in_bulk_ = false;
      if (emit(std::move(v), out)) return Status::Value;
      continue;
    }

    // A header line: type byte, content, CRLF.
    const std::size_t from = std::max(scan_, pos_);
    const std::size_t lf_at = buf_.find('\n', from);
    if (lf_at == std::string::npos) {
      // Only fail once the line is certainly too long, so that where the input is split
      // never changes the outcome.
      if (buf_.size() - pos_ > limits_.max_line_bytes + 2) return fail("line too long");
      scan_ = buf_.size();
      compact();
      return Status::NeedMore;
    }
    if (lf_at == pos_ || buf_[lf_at - 1] != '\r' || lf_at - 1 == pos_) {
      return fail("line not terminated by CRLF");
    }
    const char type = buf_[pos_];
    const std::string_view line(buf_.data() + pos_ + 1, lf_at - 1 - (pos_ + 1));
    if (line.size() > limits_.max_line_bytes) return fail("line too long");
    if (line.find('\r') != std::string_view::npos) return fail("CR inside a line");
    const std::size_t line_bytes = lf_at + 1 - pos_;
    pos_ = lf_at + 1;
    scan_ = pos_;
    if (!account(line_bytes, 1)) return fail("reply exceeds the size limit");

    switch (type) {
      case '+':
        if (emit(RespValue::simple(std::string(line)), out)) return Status::Value;
        break;
      case '-':
        if (emit(RespValue::error(std::string(line)), out)) return Status::Value;
        break;
      case ':': {
        int64_t n = 0;
        if (!parse_int(line, n)) return fail("malformed integer");
        if (emit(RespValue::integer(n), out)) return Status::Value;
        break;
      }
      case '$': {
        int64_t n = 0;
        if (!parse_int(line, n) || n < -1) return fail("malformed bulk length");
        if (n == -1) {
          if (emit(RespValue::null(), out)) return Status::Value;
          break;
        }
        if (static_cast<uint64_t>(n) > limits_.max_bulk_bytes) return fail("bulk string too long");
        bulk_len_ = static_cast<std::size_t>(n);
        if (!account(bulk_len_ + 2, 0)) return fail("reply exceeds the size limit");
        in_bulk_ = true;
        break;
      }
      case '*': {
        int64_t n = 0;
        if (!parse_int(line, n) || n < -1) return fail("malformed array length");
        if (n == -1) {
          if (emit(RespValue::null(), out)) return Status::Value;
          break;
        }
        if (static_cast<uint64_t>(n) > limits_.max_array_elements) return fail("array too long");
        if (stack_.size() >= limits_.max_depth) return fail("arrays nested too deep");
        if (n == 0) {
          if (emit(RespValue::array({}), out)) return Status::Value;
          break;
        }
        // Reserve what the declared length asks for only up to a small bound: the length is
        // the peer's word, the elements are not here yet.
        std::vector<RespValue> elements;
        elements.reserve(std::min<std::size_t>(static_cast<std::size_t>(n), 64));
        stack_.push_back(Frame{RespValue::array(std::move(elements)), static_cast<std::size_t>(n)});
        break;
      }
      default: {
        char msg[48];
        std::snprintf(msg, sizeof(msg), "unexpected RESP type byte 0x%02x",
                      static_cast<unsigned>(static_cast<unsigned char>(type)));
        return fail(msg);
      }
    }
  }
}

}  // namespace sluice::queue
