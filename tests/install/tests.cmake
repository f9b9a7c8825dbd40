# libkiln's packaging (included by tests/CMakeLists.txt; label `install`):
#   install.exports    libkiln.so exports exactly the KILN_API functions of
#                      include/kiln/kiln.h (versioned KILN_<MAJOR>), SONAME libkiln.so.<MAJOR>
#   install.consumers  `cmake --install` into a temporary prefix, then examples/c built
#                      against that tree only (pkg-config shared and static, CMake
#                      find_package kiln::kiln and kiln::kiln_static) must print what the
#                      installed `kiln run` prints for the same model and image
add_test(NAME install.exports
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_exports.sh $<TARGET_FILE:kiln_shared>
                 ${CMAKE_SOURCE_DIR}/include/kiln/kiln.h)
add_test(NAME install.consumers
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}
                 ${CMAKE_INSTALL_LIBDIR} ${KILN_PYTHON} ${CMAKE_C_COMPILER} ${KILN_SANITIZER_FLAGS})
set_tests_properties(install.exports install.consumers PROPERTIES LABELS install TIMEOUT 300)
