// The socket side shared by downstream and upstream connections: reads feed the HTTP/2 session,
// the session's output is gathered into one async write at a time (never more than one in
// flight), and flushes requested by other connections on the same worker are coalesced.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/h2/output_queue.h"
#include "src/h2/session.h"

namespace sluice {

class H2Connection : public std::enable_shared_from_this<H2Connection> {
 public:
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;
  virtual ~H2Connection() = default;

  // Asks for the session's pending frames to be written soon (coalesced per event loop turn).
  void schedule_flush();
  bool closed() const { return closed_; }

 protected:
  H2Connection(boost::asio::io_context& io, boost::asio::ip::tcp::socket socket);

  // Starts the read loop; `session` must outlive the connection's I/O.
  void start_io(h2::Session* session);
  // Writes what the session has now (called after reads and by scheduled flushes).
  void flush();
  // Closes the socket; pending writes are abandoned. on_closed() runs once.
  void close(const std::string& reason);
  // Stops reading, writes what the session still has (a GOAWAY), then closes.
  void close_after_flush(const std::string& reason);
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  boost::asio::io_context& io() { return io_; }

  // Hooks.
  virtual void on_bytes_read(std::size_t n) = 0;
  virtual void on_bytes_written(std::size_t n) = 0;
  // After each batch of input was processed by the session (before the flush).
  virtual void after_receive() {}
  // The connection is closed (peer closed, I/O or protocol error, or close() was called).
  virtual void on_closed(const std::string& reason) = 0;
  // Called when the session has nothing left to read or write (graceful end).
  virtual bool should_close_when_idle() const { return true; }

 private:
  void read_next();
  void write_next();

  static constexpr std::size_t kReadBufferSize = 32 * 1024;
  static constexpr std::size_t kHighWater = 64 * 1024;
  static constexpr std::size_t kMaxSegmentsPerWrite = 64;

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::socket socket_;
  h2::Session* session_ = nullptr;
  std::unique_ptr<uint8_t[]> read_buffer_;
  h2::OutputQueue output_;
  std::vector<boost::asio::const_buffer> write_buffers_;
  std::size_t write_size_ = 0;
  bool writing_ = false;
  bool flush_scheduled_ = false;
  bool closed_ = false;
  bool closing_ = false;  // close_after_flush() was called
  std::string closing_reason_;
};

}  // namespace sluice
