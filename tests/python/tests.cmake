# The Python package (python/: the C extension kiln._kiln over libkiln.so), included by
# tests/CMakeLists.txt; label `python`. run_tests.py makes (or reuses) a virtual
# environment in the build directory with the pinned references (ONNX Runtime, JAX; see
# pins.py), pip-installs ./python against this build's libkiln.so and runs pytest
# (tests/python): the API and its misuse, kiln.Model vs ONNX Runtime and TensorFlow.js,
# compile_hlo vs JAX, the examples/python scripts and the packaging (rpath, pkg-config).
# Under ASan the process must load the sanitizer runtime first: the API tests alone run
# there, with it preloaded. ThreadSanitizer and fuzzing builds register nothing (their
# targets run only their own labels).
if(TARGET kiln_shared AND NOT KILN_TSAN AND NOT KILN_FUZZ)
  set(_kiln_py_args "")
  if(KILN_SANITIZE)
    if(CMAKE_C_COMPILER_ID MATCHES "Clang")
      set(_kiln_asan_name libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so)
    else()
      set(_kiln_asan_name libasan.so)
    endif()
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${_kiln_asan_name}
                    OUTPUT_VARIABLE _kiln_asan_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${_kiln_asan_rt}" OR NOT EXISTS "${_kiln_asan_rt}")
      message(FATAL_ERROR "tests/python: ${CMAKE_C_COMPILER} names no ASan runtime (${_kiln_asan_name}) to preload")
    endif()
    set(_kiln_py_args --quick --preload ${_kiln_asan_rt})
  endif()
  add_test(NAME python.kiln
           COMMAND ${KILN_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/run_tests.py
                   --build-dir $<TARGET_FILE_DIR:kiln_shared> --venv ${CMAKE_BINARY_DIR}/python-venv ${_kiln_py_args}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(python.kiln PROPERTIES LABELS python TIMEOUT 900)
endif()
