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
# Two ways to link LLVM, chosen per program by its KILN_STATIC_LLVM property:
#   - kiln_llvm_shared: Debian's libLLVM-14.so, every target LLVM supports. Loading it
#     touches some 47 MiB (its relocations, and the static constructors of every
#     target and pass spread over its 97 MiB of code) before kiln does anything: half
#     of kiln's peak resident memory on a small model. The tests link it, as it links
#     in a fraction of a second and adds nothing to each test binary.
#   - kiln_llvm_static: the component archives kiln uses (ORC JIT, the pass pipeline,
#     the host target only), about 24 MiB resident after loading; what the shipped
#     programs link (the kiln tool and libkiln.so, see the root CMakeLists.txt and
#     cmake/libkiln.cmake). Their symbols stay inside (libkiln.so's version script
#     exports the API alone): a process that loads another LLVM next to libkiln.so (a
#     Python process with a JIT of its own) sees no clash.
# Sanitizer and fuzz builds link the shared library everywhere (their runtimes
# intercept the allocator either way; the static archives are not instrumented).
find_library(KILN_LLVM_LIB NAMES LLVM-14 LLVM PATHS ${KILN_LLVM_LIBDIR} NO_DEFAULT_PATH REQUIRED)
add_library(kiln_llvm_shared INTERFACE)
target_link_libraries(kiln_llvm_shared INTERFACE ${KILN_LLVM_LIB})
execute_process(COMMAND ${KILN_LLVM_CONFIG} --link-static --libfiles orcjit native passes
                OUTPUT_VARIABLE KILN_LLVM_STATIC_LIBS OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _kiln_rc)
execute_process(COMMAND ${KILN_LLVM_CONFIG} --link-static --system-libs
                OUTPUT_VARIABLE KILN_LLVM_STATIC_SYSTEM_LIBS OUTPUT_STRIP_TRAILING_WHITESPACE)
separate_arguments(KILN_LLVM_STATIC_LIBS UNIX_COMMAND "${KILN_LLVM_STATIC_LIBS}")
separate_arguments(KILN_LLVM_STATIC_SYSTEM_LIBS UNIX_COMMAND "${KILN_LLVM_STATIC_SYSTEM_LIBS}")
add_library(kiln_llvm_static INTERFACE)
if(_kiln_rc EQUAL 0 AND KILN_LLVM_STATIC_LIBS)
  # The archives depend on one another in no single order: one group resolves them.
  target_link_libraries(kiln_llvm_static INTERFACE -Wl,--start-group ${KILN_LLVM_STATIC_LIBS} -Wl,--end-group
                        ${KILN_LLVM_STATIC_SYSTEM_LIBS} stdc++)
  target_link_options(kiln_llvm_static INTERFACE "LINKER:--gc-sections")
else()
  message(STATUS "LLVM's static archives not found: every program links libLLVM-14.so")
  target_link_libraries(kiln_llvm_static INTERFACE kiln_llvm_shared)
endif()
# In kiln_backends' link interface: evaluated for each program that links it.
set(KILN_LLVM_LINK "$<IF:$<BOOL:$<TARGET_PROPERTY:KILN_STATIC_LLVM>>,kiln_llvm_static,kiln_llvm_shared>")

set(KILN_CPU_INCLUDES ${KILN_LLVM_INCLUDE} ${KILN_DNNL_INCLUDE})
set(KILN_CPU_LIBS ${KILN_LLVM_LINK} ${KILN_DNNL_LIB} OpenMP::OpenMP_C)
set(KILN_CPU_COMPILE_OPTIONS ${OpenMP_C_FLAGS})
