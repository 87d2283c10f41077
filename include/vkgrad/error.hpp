// Public: the vkgrad::Error family. Every user mistake and every failure the library can report
// is one of these, with a message naming the operation and the offending shapes, dtypes or values.
#pragma once

#include <stdexcept>
#include <string>

namespace vkgrad {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};
class ShapeError : public Error {
  using Error::Error;
};
class DTypeError : public Error {
  using Error::Error;
};
class DeviceError : public Error {
  using Error::Error;
};
class OutOfMemory : public Error {
  using Error::Error;
};
class CompileError : public Error {
  using Error::Error;
};
class FormatError : public Error {
  using Error::Error;
};
// An internal invariant failed (a bug in vkgrad, not in the caller's program).
class InternalError : public Error {
  using Error::Error;
};

}  // namespace vkgrad
