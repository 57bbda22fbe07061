# A real BLAS for the CPU fallback ops: Accelerate on macOS, the OpenBLAS that
# the scipy-openblas32 wheel ships everywhere else (found through Python, so
# the same library is used at build time and at run time).
add_library(aotishim_blas INTERFACE)
set(AOTISHIM_BLAS_RPATH_BUILD "")
set(AOTISHIM_BLAS_RPATH_INSTALL "")
if(APPLE)
  find_library(ACCELERATE Accelerate REQUIRED)
  target_link_libraries(aotishim_blas INTERFACE ${ACCELERATE})
  target_compile_definitions(aotishim_blas INTERFACE AOTISHIM_BLAS_ACCELERATE ACCELERATE_NEW_LAPACK)
  set(AOTISHIM_BLAS_RPATH_INSTALL "@loader_path")
else()
  find_package(Python COMPONENTS Interpreter REQUIRED)
  execute_process(
    COMMAND ${Python_EXECUTABLE} -c "import scipy_openblas32 as s; print(s.get_include_dir()); print(s.get_lib_dir())"
    OUTPUT_VARIABLE _ob_out RESULT_VARIABLE _ob_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _ob_rc EQUAL 0)
    message(FATAL_ERROR "aotishim needs the scipy-openblas32 wheel (pip install scipy-openblas32)")
  endif()
  string(REPLACE "\n" ";" _ob_list "${_ob_out}")
  list(GET _ob_list 0 OPENBLAS_INCLUDE_DIR)
  list(GET _ob_list 1 OPENBLAS_LIB_DIR)
  find_library(OPENBLAS_LIBRARY NAMES scipy_openblas PATHS ${OPENBLAS_LIB_DIR} NO_DEFAULT_PATH REQUIRED)
  message(STATUS "aotishim BLAS: ${OPENBLAS_LIBRARY}")
  target_include_directories(aotishim_blas INTERFACE ${OPENBLAS_INCLUDE_DIR})
  target_link_libraries(aotishim_blas INTERFACE ${OPENBLAS_LIBRARY})
  target_compile_definitions(aotishim_blas INTERFACE AOTISHIM_BLAS_SCIPY_OPENBLAS)
  # Installed: the wheel sits beside our package in site-packages.
  set(AOTISHIM_BLAS_RPATH_BUILD "$ORIGIN;${OPENBLAS_LIB_DIR}")
  set(AOTISHIM_BLAS_RPATH_INSTALL "$ORIGIN;$ORIGIN/../scipy_openblas32/lib")
endif()
