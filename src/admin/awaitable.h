// The completion token the admin server and client co_await with: operations yield
// (error_code, results...) as a tuple instead of throwing.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice {

inline constexpr auto kAsTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace sluice
