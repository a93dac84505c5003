// Environment variables set for one scope: the previous values (or their
// absence) come back when it ends, also when an ASSERT returns early.
#pragma once

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

class scoped_environment {
 public:
  scoped_environment() = default;
  scoped_environment(const scoped_environment&) = delete;
  scoped_environment& operator=(const scoped_environment&) = delete;

  void set(const std::string& name, const char* value) {
    if (!saved_.contains(name)) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    setenv(name.c_str(), value, 1);
  }
  ~scoped_environment() {
    for (const auto& [name, old] : saved_)
      if (old)
        setenv(name.c_str(), old->c_str(), 1);
      else
        unsetenv(name.c_str());
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};
