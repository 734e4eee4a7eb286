// Errors as values inside the core (Status, Result<T>); the API edge turns them
// into onyx::Error exceptions.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace onyx {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // a wrong feed, option or call
  kInvalidModel,     // the model file or graph is malformed
  kNotImplemented,   // an op, version or type onyx lacks
  kRuntimeError,     // a kernel failed on valid input
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Concatenates anything streamable into one string: str_cat("rank ", 3).
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <typename... Args>
Status invalid_argument(const Args&... args) {
  return Status(StatusCode::kInvalidArgument, str_cat(args...));
}
template <typename... Args>
Status invalid_model(const Args&... args) {
  return Status(StatusCode::kInvalidModel, str_cat(args...));
}
template <typename... Args>
Status not_implemented(const Args&... args) {
  return Status(StatusCode::kNotImplemented, str_cat(args...));
}
template <typename... Args>
Status runtime_error(const Args&... args) {
  return Status(StatusCode::kRuntimeError, str_cat(args...));
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {}  // NOLINT

  bool is_ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(state_);
  }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> state_;
};

// The exception thrown at the C++ API edge; Python sees it as a RuntimeError
// (or the subclass matching its code).
class Error : public std::runtime_error {
 public:
  explicit Error(const Status& status) : std::runtime_error(status.message()), code_(status.code()) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

inline void throw_if_error(const Status& status) {
  if (!status.is_ok()) throw Error(status);
}

}  // namespace onyx

#define ONYX_CONCAT_IMPL(a, b) a##b
#define ONYX_CONCAT(a, b) ONYX_CONCAT_IMPL(a, b)

#define ONYX_RETURN_IF_ERROR(expr)                   \
  do {                                               \
    ::onyx::Status onyx_status_ = (expr);            \
    if (!onyx_status_.is_ok()) return onyx_status_;  \
  } while (0)

#define ONYX_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.is_ok()) return tmp.status();           \
  lhs = std::move(tmp).value()

// ONYX_ASSIGN_OR_RETURN(auto x, make_x()); returns the Status on failure.
#define ONYX_ASSIGN_OR_RETURN(lhs, expr) \
  ONYX_ASSIGN_OR_RETURN_IMPL(ONYX_CONCAT(onyx_result_, __LINE__), lhs, expr)
