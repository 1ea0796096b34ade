// The one exception configuration loading throws: where (file, line:column, YAML path) and what.
#pragma once

#include <stdexcept>
#include <string>

namespace sluice {

// what() is "FILE:LINE:COL: at YAML_PATH: MESSAGE". Parts that do not apply are left out:
// a YAML syntax error has no path ("FILE:LINE:COL: MESSAGE"), an unreadable file has neither
// position nor path ("FILE: MESSAGE"). Line and column are 1-based; 0 means unknown.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, int line, int column, std::string yaml_path, std::string message);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& yaml_path() const { return yaml_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string yaml_path_;
  std::string message_;
};

}  // namespace sluice
