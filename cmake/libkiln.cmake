# libkiln: the public C API (include/kiln/kiln.h, implemented in src/api) packaged for
# programs outside this tree, and the install rules. Included by the root
# CMakeLists.txt after every layer library exists; expects KILN_API_SRC (src/api/*.c).
#
#   kiln_api      static library: src/api on top of kiln_all (tests link it)
#   kiln_shared   libkiln.so.MAJOR.MINOR.PATCH, SONAME libkiln.so.MAJOR: kiln_api's objects
#                 plus what they need from the layer archives; exports exactly the
#                 functions kiln.h declares KILN_API (see "Exports" below)
#   kiln_static   libkiln.a: kiln_api and every layer archive merged into one, so a static
#                 program links -lkiln plus the private dependencies (kiln.pc's Libs.private)
#
# Exports. Two guards, both derived from include/kiln/kiln.h:
#   1. compile time: every kiln source is built with -fvisibility=hidden (root
#      CMakeLists.txt); only declarations marked KILN_API (visibility "default") are
#      visible, so internal names that also start with kiln_ (kiln_flags, kiln_cpu_ipow)
#      never are, whatever file they live in;
#   2. link time: a version script generated from the header (cmake/libkiln.map.in) lists
#      the KILN_API functions by name under the version node KILN_<MAJOR> and makes every
#      other symbol local: nothing outside the header's list can leak even if a source is
#      compiled with other flags, and the static archives' symbols (libLLVM, oneDNN are
#      shared and stay outside) never appear. The same list is passed as --undefined so the
#      linker pulls each API function from whichever layer archive defines it (the status
#      functions live in kiln_base).
# tests/install/check_exports.sh checks the result against the header independently.

# ---- the public symbol list, from the header ----
file(STRINGS ${CMAKE_SOURCE_DIR}/include/kiln/kiln.h _kiln_api_decls REGEX "^KILN_API ")
set(KILN_PUBLIC_SYMBOLS "")
foreach(_decl IN LISTS _kiln_api_decls)
  # file(STRINGS) splits a line at ';' into list items: only the items holding KILN_API
  # matter, and each still holds "KILN_API type name(".
  if(NOT _decl MATCHES "^KILN_API ")
    continue()
  endif()
  if(NOT _decl MATCHES "([A-Za-z_][A-Za-z0-9_]*) *\\(")
    message(FATAL_ERROR "include/kiln/kiln.h: cannot find the function name in: ${_decl}\n"
                        "(a KILN_API declaration must name the function on its first line)")
  endif()
  list(APPEND KILN_PUBLIC_SYMBOLS ${CMAKE_MATCH_1})
endforeach()
list(REMOVE_DUPLICATES KILN_PUBLIC_SYMBOLS)
if(NOT KILN_PUBLIC_SYMBOLS)
  message(FATAL_ERROR "include/kiln/kiln.h declares no KILN_API function")
endif()
list(JOIN KILN_PUBLIC_SYMBOLS ";\n    " KILN_MAP_GLOBALS)
set(KILN_MAP_GLOBALS "${KILN_MAP_GLOBALS};")
set(KILN_VERSION_SCRIPT ${CMAKE_BINARY_DIR}/libkiln.map)
configure_file(${CMAKE_SOURCE_DIR}/cmake/libkiln.map.in ${KILN_VERSION_SCRIPT} @ONLY)

# ---- kiln_api ----
if(KILN_API_SRC)
  add_library(kiln_api STATIC ${KILN_API_SRC})
  target_link_libraries(kiln_api PUBLIC kiln_all)
  set(_kiln_shared_src $<TARGET_OBJECTS:kiln_api>)
else()
  # src/api not written yet: the library still links (from the layers' API functions) and
  # the export test reports every missing function.
  message(WARNING "src/api/*.c: no sources; libkiln will lack most of include/kiln/kiln.h")
  add_library(kiln_api INTERFACE)
  target_link_libraries(kiln_api INTERFACE kiln_all)
  set(_kiln_shared_src ${CMAKE_BINARY_DIR}/kiln_api_missing.c)
  file(WRITE ${_kiln_shared_src} "/* generated: src/api has no sources yet */\ntypedef int kiln_api_missing;\n")
endif()

# ---- libkiln.so ----
add_library(kiln_shared SHARED ${_kiln_shared_src})
target_link_libraries(kiln_shared PRIVATE kiln_all)
set_target_properties(kiln_shared PROPERTIES
  OUTPUT_NAME kiln
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
  LINK_DEPENDS ${KILN_VERSION_SCRIPT})
target_link_options(kiln_shared PRIVATE "LINKER:--version-script=${KILN_VERSION_SCRIPT}")
foreach(_sym IN LISTS KILN_PUBLIC_SYMBOLS)
  target_link_options(kiln_shared PRIVATE "LINKER:--undefined=${_sym}")
endforeach()
# Unresolved symbols fail the link, not the consumer's. Sanitizer runtimes are linked into
# executables only by clang (and libtsan/libasan resolve at load time), so not there.
if(NOT KILN_SANITIZE AND NOT KILN_FUZZ AND NOT KILN_TSAN)
  target_link_options(kiln_shared PRIVATE "LINKER:-z,defs")
  set_target_properties(kiln_shared PROPERTIES KILN_STATIC_LLVM ON) # cmake/cpu_deps.cmake
endif()

# ---- libkiln.a: one archive of kiln_api and every layer library ----
set(KILN_STATIC_ARCHIVE ${CMAKE_BINARY_DIR}/libkiln.a)
set(_kiln_archive_targets "")
foreach(_t kiln_api kiln_jit kiln_exec kiln_import kiln_ops kiln_backends kiln_eval kiln_graph kiln_hlo kiln_base)
  if(TARGET ${_t})
    get_target_property(_type ${_t} TYPE)
    if(_type STREQUAL "STATIC_LIBRARY")
      list(APPEND _kiln_archive_targets ${_t})
    endif()
  endif()
endforeach()
# An ar MRI script (GNU ar and llvm-ar read it): CREATE, one ADDLIB per archive, SAVE.
set(_kiln_mri "CREATE ${KILN_STATIC_ARCHIVE}.tmp\n")
foreach(_t IN LISTS _kiln_archive_targets)
  string(APPEND _kiln_mri "ADDLIB $<TARGET_FILE:${_t}>\n")
endforeach()
string(APPEND _kiln_mri "SAVE\nEND\n")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/libkiln.mri CONTENT "${_kiln_mri}")
add_custom_command(
  OUTPUT ${KILN_STATIC_ARCHIVE}
  COMMAND ${CMAKE_COMMAND} -DAR=${CMAKE_AR} -DRANLIB=${CMAKE_RANLIB} -DMRI=${CMAKE_BINARY_DIR}/libkiln.mri
          -DOUT=${KILN_STATIC_ARCHIVE} -P ${CMAKE_SOURCE_DIR}/cmake/merge_archives.cmake
  DEPENDS ${_kiln_archive_targets} ${CMAKE_BINARY_DIR}/libkiln.mri ${CMAKE_SOURCE_DIR}/cmake/merge_archives.cmake
  COMMENT "Merging the kiln archives into libkiln.a"
  VERBATIM)
add_custom_target(kiln_static ALL DEPENDS ${KILN_STATIC_ARCHIVE})

# ---- private dependencies, for static consumers (kiln.pc, kiln::kiln_static) ----
# Library files found on the system: libLLVM-14, oneDNN, protobuf-c, and OpenMP's libgomp.
set(_kiln_dep_files ${KILN_LLVM_LIB} ${KILN_DNNL_LIB} ${KILN_IMPORT_EXTRA_LIBS})
if(KILN_GOMP_LIB)
  list(APPEND _kiln_dep_files ${KILN_GOMP_LIB})
elseif(OpenMP_gomp_LIBRARY)
  list(APPEND _kiln_dep_files ${OpenMP_gomp_LIBRARY})
endif()
set(_kiln_dep_names pthread m ${CMAKE_DL_LIBS})
# pkg-config form: -lNAME, with -LDIR only where the compiler would not look anyway.
set(_kiln_pc_libs "")
foreach(_f IN LISTS _kiln_dep_files)
  get_filename_component(_dir ${_f} DIRECTORY)
  get_filename_component(_name ${_f} NAME)
  string(REGEX REPLACE "^lib" "" _name ${_name})
  string(REGEX REPLACE "\\.(so(\\..*)?|a)$" "" _name ${_name})
  list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES ${_dir} _implicit)
  if(_implicit EQUAL -1 AND NOT _dir MATCHES "^(/usr)?/lib(64)?(/${CMAKE_LIBRARY_ARCHITECTURE})?$")
    list(APPEND _kiln_pc_libs -L${_dir})
  endif()
  list(APPEND _kiln_pc_libs -l${_name})
endforeach()
foreach(_n IN LISTS _kiln_dep_names)
  list(APPEND _kiln_pc_libs -l${_n})
endforeach()
list(REMOVE_DUPLICATES _kiln_pc_libs)
list(JOIN _kiln_pc_libs " " KILN_PC_LIBS_PRIVATE)
set(KILN_STATIC_DEPS ${_kiln_dep_files} ${_kiln_dep_names})

# ---- install ----
# include/kiln, lib/libkiln.so* + libkiln.a, bin/kiln, lib/kiln/plugins (plugins/),
# lib/pkgconfig/kiln.pc, lib/cmake/kiln. The pkg-config file and the CMake package locate
# the prefix from their own position, so `cmake --install build --prefix DIR` and a
# moved tree both work.
install(FILES ${CMAKE_SOURCE_DIR}/include/kiln/kiln.h ${CMAKE_SOURCE_DIR}/include/kiln/plugin.h
              ${CMAKE_SOURCE_DIR}/include/kiln/plugin_v1.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)
install(TARGETS kiln_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${KILN_STATIC_ARCHIVE} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS kiln RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(KILN_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/kiln/plugins)

if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "kiln.pc and kilnConfig.cmake need a relative CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR")
endif()
file(RELATIVE_PATH KILN_PC_PREFIX_FROM_PCFILEDIR /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
string(REGEX REPLACE "/$" "" KILN_PC_PREFIX_FROM_PCFILEDIR "${KILN_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/kiln.pc.in ${CMAKE_BINARY_DIR}/kiln.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

include(CMakePackageConfigHelpers)
set(KILN_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/kilnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/kilnConfig.cmake
  INSTALL_DESTINATION ${KILN_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
# The SONAME carries MAJOR: a consumer built against MAJOR.x runs with any later MAJOR.y.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/kilnConfig.cmake ${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_INSTALL_DIR})
