// A value or an error: how the queue library reports failures on the data path (no exceptions).
// C++20 has no std::expected; this is the small subset the library needs.
#pragma once

#include <type_traits>
#include <utility>
#include <variant>

namespace sluice::queue {

template <typename T, typename E>
class Result {
  // A Result<X, X> could not tell its value from its error by construction.
  static_assert(!std::is_same_v<T, E>, "value and error types must differ");

 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit on purpose
  Result(E error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit on purpose

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Precondition: ok(). Checked by std::get (throws bad_variant_access: a programming error).
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Precondition: !ok().
  const E& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

}  // namespace sluice::queue
