// Errors as values. Library code returns Status or Result<T>; only apps/ turns
// an error into an exit code. A Status carries a one-line message that already
// names the node/op/file it is about, so callers only add context, never parse.
#pragma once
#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace ort_train {

// kUnavailable: the hardware asked for is not there (--device cuda without a
// GPU, a driver or a CUDA build), as opposed to an op or feature ort_train lacks.
enum class ErrorCode { kOk = 0, kInvalidArgument, kNotFound, kUnsupported, kIo, kShape, kInternal, kUnavailable };

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Prefixes context ("node 'x' (Add): ...") keeping the code.
  Status with_context(const std::string& prefix) const {
    return ok() ? *this : Status(code_, prefix + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status invalid_argument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(ErrorCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status shape_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status(ErrorCode::kShape, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status unsupported(fmt::format_string<Args...> f, Args&&... args) {
  return Status(ErrorCode::kUnsupported, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status unavailable(fmt::format_string<Args...> f, Args&&... args) {
  return Status(ErrorCode::kUnavailable, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status io_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status(ErrorCode::kIo, fmt::format(f, std::forward<Args>(args)...));
}

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ort_train

#define ORT_CONCAT_INNER(a, b) a##b
#define ORT_CONCAT(a, b) ORT_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::ort_train::Status _st = (expr);         \
    if (!_st.ok()) return _st;                \
  } while (0)

// ASSIGN_OR_RETURN(auto x, make_x()); binds x or returns the error.
#define ASSIGN_OR_RETURN(decl, expr) ASSIGN_OR_RETURN_IMPL(ORT_CONCAT(_res_, __LINE__), decl, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  decl = std::move(tmp).value()

#define RETURN_ERROR_IF(cond, maker, ...) \
  do {                                    \
    if (cond) return maker(__VA_ARGS__);  \
  } while (0)
