# Third-party pieces the model importers need, found on the system (Debian packages)
# and wired into kiln_import by the root CMakeLists.txt. The ONNX importer decodes
# model files with protobuf-c: C code generated at configure/build time by protoc-c from
# the onnx.proto that Debian's libonnx-dev ships, so the schema is always the one the
# system's ONNX knows and no generated code is ever committed. Outputs (consumed by the
# root CMakeLists.txt): KILN_IMPORT_EXTRA_SRC, KILN_IMPORT_EXTRA_INCLUDES,
# KILN_IMPORT_EXTRA_LIBS.

set(KILN_IMPORT_DEBIAN_PACKAGES "protobuf-c-compiler libprotobuf-c-dev libonnx-dev")

find_program(KILN_PROTOC_C protoc-c)
find_path(KILN_PROTOBUF_C_INCLUDE protobuf-c/protobuf-c.h)
find_library(KILN_PROTOBUF_C_LIB protobuf-c)
# onnx.proto: Debian's libonnx-dev installs it beside the C++ headers; python3-onnx
# carries a copy too. Either is the proto2 schema with the same field numbers.
find_file(KILN_ONNX_PROTO onnx.proto
  PATHS /usr/include/onnx /usr/local/include/onnx /usr/lib/python3/dist-packages/onnx
  NO_DEFAULT_PATH)

set(_kiln_missing "")
if(NOT KILN_PROTOC_C)
  list(APPEND _kiln_missing "protoc-c (Debian package protobuf-c-compiler)")
endif()
if(NOT KILN_PROTOBUF_C_INCLUDE OR NOT KILN_PROTOBUF_C_LIB)
  list(APPEND _kiln_missing "protobuf-c headers/library (Debian package libprotobuf-c-dev)")
endif()
if(NOT KILN_ONNX_PROTO)
  list(APPEND _kiln_missing "onnx.proto (Debian package libonnx-dev)")
endif()
if(_kiln_missing)
  string(REPLACE ";" ", " _kiln_missing "${_kiln_missing}")
  message(FATAL_ERROR
    "kiln's ONNX importer needs: ${_kiln_missing}.\n"
    "Install the Debian packages with: apt-get install ${KILN_IMPORT_DEBIAN_PACKAGES}\n"
    "(or run scripts/install-deps.sh).")
endif()

# Generated into the build tree: ${gen}/onnx/onnx.pb-c.{c,h}, included by the importer
# as "onnx/onnx.pb-c.h".
set(_kiln_gen_root ${CMAKE_BINARY_DIR}/generated)
set(_kiln_gen_dir ${_kiln_gen_root}/onnx)
get_filename_component(_kiln_proto_dir ${KILN_ONNX_PROTO} DIRECTORY)
file(MAKE_DIRECTORY ${_kiln_gen_dir})
add_custom_command(
  OUTPUT ${_kiln_gen_dir}/onnx.pb-c.c ${_kiln_gen_dir}/onnx.pb-c.h
  COMMAND ${KILN_PROTOC_C} --proto_path=${_kiln_proto_dir} --c_out=${_kiln_gen_dir} ${KILN_ONNX_PROTO}
  DEPENDS ${KILN_ONNX_PROTO}
  COMMENT "protoc-c: generating C code for ${KILN_ONNX_PROTO}"
  VERBATIM)
# Generated code is not ours to lint: keep kiln's warning flags off it.
set_source_files_properties(${_kiln_gen_dir}/onnx.pb-c.c PROPERTIES GENERATED TRUE COMPILE_OPTIONS "-w")

list(APPEND KILN_IMPORT_EXTRA_SRC ${_kiln_gen_dir}/onnx.pb-c.c)
list(APPEND KILN_IMPORT_EXTRA_INCLUDES ${_kiln_gen_root} ${KILN_PROTOBUF_C_INCLUDE})
list(APPEND KILN_IMPORT_EXTRA_LIBS ${KILN_PROTOBUF_C_LIB})
