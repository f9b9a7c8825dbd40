# ONNX's conformance suite (node test cases generated from the pinned onnx package, and
# the legacy backend test models its wheel ships), run on kiln and ONNX Runtime by
# run_onnx_suite.py in a reference environment of its own (build-venvs/onnx-suite-venv,
# shared by every build directory).
# Fails when a case listed in kiln_passes.txt stops passing, or when kiln crashes or
# hangs on any case. onnx_suite.narrow_types checks kiln's float8/float4/int4
# conversions against ml_dtypes' tables from the same environment; the lock keeps the
# two from making it at once. Included by tests/CMakeLists.txt.
if(NOT KILN_TSAN AND NOT KILN_FUZZ)
  add_test(NAME onnx_suite.conformance
           COMMAND ${KILN_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/run_onnx_suite.py --kiln $<TARGET_FILE:kiln>
                   --work ${CMAKE_BINARY_DIR}/onnx-suite
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  add_test(NAME onnx_suite.narrow_types
           COMMAND ${KILN_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/test_narrow_types.py --kiln $<TARGET_FILE:kiln>
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(onnx_suite.conformance PROPERTIES LABELS reference TIMEOUT 1200
                       RESOURCE_LOCK onnx-suite-venv)
  set_tests_properties(onnx_suite.narrow_types PROPERTIES LABELS reference TIMEOUT 300
                       RESOURCE_LOCK onnx-suite-venv)
endif()
