// A filter's own parameters, as the config layer sees them: opaque values it stores, compares
// and prints. Each filter type (filters/<type>/) defines its plain struct and how it is read;
// filters/filter_registry.cc lists the types.
#pragma once

#include <boost/json/object.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

class ConfigNode;

class FilterParams {
 public:
  virtual ~FilterParams() = default;
  // Adds the fields, keyed by their YAML names, defaults filled in (for /config_dump).
  virtual void dump(boost::json::object& out) const = 0;
  virtual bool equals(const FilterParams& other) const = 0;
};

// A plain struct as FilterParams. `T` needs operator== and `void dump(boost::json::object&)
// const`.
template <class T>
class FilterParamsOf final : public FilterParams {
 public:
  explicit FilterParamsOf(T value) : value_(std::move(value)) {}
  const T& value() const { return value_; }
  void dump(boost::json::object& out) const override { value_.dump(out); }
  bool equals(const FilterParams& other) const override {
    const auto* o = dynamic_cast<const FilterParamsOf<T>*>(&other);
    return o != nullptr && o->value_ == value_;
  }

 private:
  T value_;
};

// The filter types a configuration may use and how each reads its parameters. The loader asks
// it about every `filters:` entry; sluice's own list is filters/filter_registry.h.
class FilterTypes {
 public:
  virtual ~FilterTypes() = default;
  virtual std::vector<std::string_view> names() const = 0;
  // Validates the entry `node` of type `type` (a name from names()), its keys included, and
  // returns its parameters. Throws ConfigError pointing into `node`.
  virtual std::shared_ptr<const FilterParams> read(std::string_view type,
                                                   const ConfigNode& node) const = 0;
};

}  // namespace sluice
