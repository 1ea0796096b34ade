// The socket side shared by downstream and upstream connections: reads feed the HTTP/2 session,
// the session's output is gathered into one async write at a time (never more than one in
// flight), and flushes requested by other connections on the same worker are coalesced.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/core/time.h"
#include "src/h2/output_queue.h"
#include "src/h2/session.h"
#include "src/proxy/close_reason.h"
#include "src/proxy/transport.h"

namespace sluice {

class H2Connection : public std::enable_shared_from_this<H2Connection> {
 public:
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;
  virtual ~H2Connection() = default;

  // Asks for the session's pending frames to be written soon (coalesced per event loop turn).
  void schedule_flush();
  bool closed() const { return closed_; }
  // When the socket write in flight started, if one is in flight.
  std::optional<TimePoint> write_pending_since() const {
    return writing_ ? std::optional<TimePoint>(write_started_) : std::nullopt;
  }

 protected:
  H2Connection(boost::asio::io_context& io, boost::asio::ip::tcp::socket socket);

  // Starts the read loop; `session` must outlive the connection's I/O.
  void start_io(h2::Session* session);
  // Writes what the session has now (called after reads and by scheduled flushes).
  void flush();
  // Closes the socket; pending writes are abandoned. on_closed() runs once. `message` says what
  // happened in words (streams that lose their upstream pass it on to their clients).
  void close(CloseReason reason, const std::string& message);
  // Stops reading, writes what the session still has (a GOAWAY), then closes.
  void close_after_flush(CloseReason reason, const std::string& message);
  boost::asio::ip::tcp::socket& socket() { return transport_.socket(); }
  Transport& transport() { return transport_; }
  boost::asio::io_context& io() { return io_; }

  // Hooks.
  virtual void on_bytes_read(std::size_t n) = 0;
  virtual void on_bytes_written(std::size_t n) = 0;
  // After each batch of input was processed by the session (before the flush).
  virtual void after_receive() {}
  // The connection is closed (peer closed, I/O or protocol error, or close() was called).
  virtual void on_closed(CloseReason reason, const std::string& message) = 0;
  // The connection will close for `reason` (now, or once the last frames are written): the
  // moment to count it. Called once per connection, before on_closed().
  virtual void count_close(CloseReason reason) = 0;
  // Called when the session has nothing left to read or write (graceful end).
  virtual bool should_close_when_idle() const { return true; }

 private:
  void read_next();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void write_next();
  void decide_close(CloseReason reason);

  static constexpr std::size_t kReadBufferSize = std::size_t{32} * 1024;
  static constexpr std::size_t kHighWater = std::size_t{64} * 1024;
  static constexpr std::size_t kMaxSegmentsPerWrite = 64;

  boost::asio::io_context& io_;
  Transport transport_;
  h2::Session* session_ = nullptr;
  std::unique_ptr<uint8_t[]> read_buffer_;
  h2::OutputQueue output_;
  std::vector<boost::asio::const_buffer> write_buffers_;
  // TLS writes are linearised first: one TLS record per frame header would waste bytes and CPU.
  std::vector<uint8_t> tls_write_buffer_;
  std::size_t write_size_ = 0;
  bool writing_ = false;
  TimePoint write_started_{};
  bool flush_scheduled_ = false;
  bool closed_ = false;
  bool closing_ = false;  // close_after_flush() was called
  bool counted_ = false;  // count_close() was called
  CloseReason closing_reason_ = CloseReason::Finished;
  std::string closing_message_;
};

}  // namespace sluice
