#include "src/config/config_error.h"

#include <utility>

namespace sluice {
namespace {

std::string format(const std::string& file, int line, int column, const std::string& yaml_path,
                   const std::string& message) {
  std::string out = file;
  if (line > 0) {
    out += ':' + std::to_string(line);
    if (column > 0) out += ':' + std::to_string(column);
  }
  out += ": ";
  if (!yaml_path.empty()) out += "at " + yaml_path + ": ";
  out += message;
  return out;
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, int column, std::string yaml_path,
                         std::string message)
    : std::runtime_error(format(file, line, column, yaml_path, message)),
      file_(std::move(file)),
      line_(line),
      column_(column),
      yaml_path_(std::move(yaml_path)),
      message_(std::move(message)) {}

}  // namespace sluice
