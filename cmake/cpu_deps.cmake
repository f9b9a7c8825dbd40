# Third-party pieces the built-in `cpu` backend needs, found on the system (Debian
# packages) and linked into kiln_backends by the root CMakeLists.txt:
#   - LLVM 14 (llvm-14-dev): the C API (llvm-c/Core.h, llvm-c/LLJIT.h) that generates
#     and JIT-compiles one function per fused kernel;
#   - oneDNN (libdnnl-dev): convolution and matrix products;
#   - OpenMP (libgomp, which oneDNN's Debian build uses): the one thread pool that both
#     the generated kernels and oneDNN's primitives run on.
# Outputs: KILN_CPU_INCLUDES, KILN_CPU_LIBS, KILN_CPU_COMPILE_OPTIONS.

set(KILN_CPU_DEBIAN_PACKAGES "llvm-14-dev libdnnl-dev")

find_program(KILN_LLVM_CONFIG NAMES llvm-config-14)
find_path(KILN_DNNL_INCLUDE dnnl.h)
find_library(KILN_DNNL_LIB dnnl)
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  # clang (the fuzz build) targets gcc's libgomp, the runtime oneDNN's Debian build
  # links: one OpenMP runtime per process (kiln includes no omp.h, which clang cannot
  # parse in gcc's version).
  execute_process(COMMAND gcc -print-file-name=libgomp.so OUTPUT_VARIABLE _kiln_gcc_gomp
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  find_library(KILN_GOMP_LIB NAMES gomp libgomp.so.1 HINTS ${_kiln_gcc_gomp})
  if(KILN_GOMP_LIB)
    add_library(kiln_openmp INTERFACE)
    target_link_libraries(kiln_openmp INTERFACE ${KILN_GOMP_LIB})
    add_library(OpenMP::OpenMP_C ALIAS kiln_openmp)
    set(OpenMP_C_FOUND TRUE)
    set(OpenMP_C_FLAGS -fopenmp=libgomp)
  endif()
else()
  find_package(OpenMP COMPONENTS C)
endif()

set(_kiln_cpu_missing "")
if(NOT KILN_LLVM_CONFIG)
  list(APPEND _kiln_cpu_missing "llvm-config-14 (Debian package llvm-14-dev)")
endif()
if(NOT KILN_DNNL_INCLUDE OR NOT KILN_DNNL_LIB)
  list(APPEND _kiln_cpu_missing "oneDNN headers/library (Debian package libdnnl-dev)")
endif()
if(NOT OpenMP_C_FOUND)
  list(APPEND _kiln_cpu_missing "OpenMP for C (gcc's libgomp)")
endif()
if(_kiln_cpu_missing)
  string(REPLACE ";" ", " _kiln_cpu_missing_text "${_kiln_cpu_missing}")
  message(FATAL_ERROR "The cpu backend needs: ${_kiln_cpu_missing_text}. "
                      "Run scripts/install-deps.sh (apt-get install ${KILN_CPU_DEBIAN_PACKAGES}).")
endif()

execute_process(COMMAND ${KILN_LLVM_CONFIG} --includedir OUTPUT_VARIABLE KILN_LLVM_INCLUDE
                OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${KILN_LLVM_CONFIG} --libdir OUTPUT_VARIABLE KILN_LLVM_LIBDIR
                OUTPUT_STRIP_TRAILING_WHITESPACE)
# The shared libLLVM-14.so: linking the static component libraries would add minutes
# to every link on a 2-core machine.
find_library(KILN_LLVM_LIB NAMES LLVM-14 LLVM PATHS ${KILN_LLVM_LIBDIR} NO_DEFAULT_PATH REQUIRED)

set(KILN_CPU_INCLUDES ${KILN_LLVM_INCLUDE} ${KILN_DNNL_INCLUDE})
set(KILN_CPU_LIBS ${KILN_LLVM_LIB} ${KILN_DNNL_LIB} OpenMP::OpenMP_C)
set(KILN_CPU_COMPILE_OPTIONS ${OpenMP_C_FLAGS})
