#include "src/proxy/h2_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace sluice {

namespace asio = boost::asio;

H2Connection::H2Connection(asio::io_context& io, asio::ip::tcp::socket socket)
    : io_(io), transport_(std::move(socket)) {}

void H2Connection::start_io(h2::Session* session) {
  session_ = session;
  read_buffer_ = std::make_unique_for_overwrite<uint8_t[]>(kReadBufferSize);
  boost::system::error_code ignored;
  transport_.socket().set_option(asio::ip::tcp::no_delay(true), ignored);
  read_next();
  flush();  // the connection preface / SETTINGS
}

void H2Connection::read_next() {
  transport_.async_read_some(
      asio::buffer(read_buffer_.get(), kReadBufferSize),
      [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
        if (self->closed_) return;
        self->on_read(ec, n);
      });
}

void H2Connection::on_read(const boost::system::error_code& ec, std::size_t n) {
  const LoopTime::Scope time_scope;  // one clock read for every frame of this batch
  if (ec) {
    if (ec == asio::error::eof) {
      close(CloseReason::PeerClosed, "peer closed the connection");
    } else {
      close(CloseReason::ReadError, ec.message());
    }
    return;
  }
  on_bytes_read(n);
  if (!session_->receive(read_buffer_.get(), n)) {
    after_receive();
    if (session_->flooded()) {
      // The peer does not read: a GOAWAY would wait behind the flood. Close now.
      close(CloseReason::ProtocolError, "protocol error: " + session_->last_error());
      return;
    }
    // A connection error: the session queued a GOAWAY; write it, then close.
    close_after_flush(CloseReason::ProtocolError, "protocol error: " + session_->last_error());
    return;
  }
  after_receive();
  if (closed_) return;
  flush();
  if (closed_ || closing_) return;
  read_next();
}

void H2Connection::schedule_flush() {
  if (flush_scheduled_ || closed_) return;
  flush_scheduled_ = true;
  asio::post(io_, [self = shared_from_this()] {
    self->flush_scheduled_ = false;
    const LoopTime::Scope time_scope;
    if (!self->closed_) self->flush();
  });
}

void H2Connection::flush() {
  if (closed_ || writing_) return;  // write completion flushes again
  if (!session_->send(output_, kHighWater)) {
    close(CloseReason::SessionError, "HTTP/2 session error: " + session_->last_error());
    return;
  }
  if (output_.empty()) {
    if (closing_) {
      close(closing_reason_, closing_message_);
    } else if (session_->finished() && should_close_when_idle()) {
      close(CloseReason::Finished, "session finished");
    }
    return;
  }
  write_next();
}

void H2Connection::write_next() {
  write_buffers_.clear();
  write_size_ = 0;
  if (transport_.is_tls()) {
    tls_write_buffer_.clear();
    output_.for_each_front(kMaxSegmentsPerWrite, [this](const uint8_t* p, std::size_t n) {
      tls_write_buffer_.insert(tls_write_buffer_.end(), p, p + n);
    });
    write_size_ = tls_write_buffer_.size();
    write_buffers_.emplace_back(tls_write_buffer_.data(), tls_write_buffer_.size());
  } else {
    output_.for_each_front(kMaxSegmentsPerWrite, [this](const uint8_t* p, std::size_t n) {
      write_buffers_.emplace_back(p, n);
      write_size_ += n;
    });
  }
  writing_ = true;
  write_started_ = LoopTime::now();
  transport_.async_write(write_buffers_, [self = shared_from_this()](
                                             const boost::system::error_code& ec, std::size_t n) {
    self->writing_ = false;
    if (self->closed_) return;
    const LoopTime::Scope time_scope;
    if (ec) {
      self->close(CloseReason::WriteError, "write failed: " + ec.message());
      return;
    }
    self->output_.consume(n);
    self->on_bytes_written(n);
    self->flush();
  });
}

void H2Connection::decide_close(CloseReason reason) {
  if (counted_) return;
  counted_ = true;
  count_close(reason);
}

void H2Connection::close_after_flush(CloseReason reason, const std::string& message) {
  if (closed_ || closing_) return;
  decide_close(reason);
  closing_ = true;
  closing_reason_ = reason;
  closing_message_ = message;
  // Never flush synchronously here: this may run inside an nghttp2 callback of this session.
  flush_scheduled_ = false;
  schedule_flush();
}

void H2Connection::close(CloseReason reason, const std::string& message) {
  if (closed_) return;
  decide_close(reason);
  closed_ = true;
  transport_.close();
  on_closed(reason, message);
}

}  // namespace sluice
