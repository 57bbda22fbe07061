// Running C++ work with the GIL released, in a way that survives interpreter
// shutdown. When the interpreter finalizes while a daemon thread is inside
// such work, retaking the GIL ends that thread (pthread_exit, a forced
// unwind); from pybind11's gil_scoped_release, whose destructor retakes it,
// the unwind leaves a noexcept destructor and the process aborts. Here the
// GIL is retaken by a plain call, never from a destructor, and a thread that
// finds the interpreter finalizing when its work is done does not go back to
// Python at all: it parks, holding nothing, until the process exits.
#pragma once

#include <Python.h>
#include <unistd.h>

#include <exception>
#include <type_traits>
#include <utility>

namespace aotishim::python {

inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

[[noreturn]] inline void park_forever() {
  for (;;) pause();
}

// fn() without the GIL; its exception, if any, is rethrown with the GIL held.
template <typename Fn>
auto without_gil(Fn&& fn) -> decltype(fn()) {
  using Result = decltype(fn());
  // The thread that finalizes released the GIL during finalization itself;
  // only a thread that saw the interpreter alive must not come back.
  const bool finalizing_before = interpreter_finalizing();
  PyThreadState* state = PyEval_SaveThread();
  std::exception_ptr error;
  std::conditional_t<std::is_void_v<Result>, int, Result> result{};
  try {
    if constexpr (std::is_void_v<Result>) {
      fn();
    } else {
      result = fn();
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (!finalizing_before && interpreter_finalizing()) park_forever();
  PyEval_RestoreThread(state);
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<Result>) return result;
}

}  // namespace aotishim::python
