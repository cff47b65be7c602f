# SPDX-License-Identifier: Apache-2.0
#
# Shared build pieces: Debian libraries as imported targets (pkg-config), the
# warnings interface target, the sanitizer and fuzzer switches, and the helpers
# every component uses to declare tests and fuzz targets with the right labels.

find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

# Debian packages, by their pkg-config names (scripts/setup.sh installs them).
pkg_check_modules(EVENT REQUIRED IMPORTED_TARGET libevent_core libevent_extra)
pkg_check_modules(EVENT_PTHREADS REQUIRED IMPORTED_TARGET libevent_pthreads)
pkg_check_modules(EVENT_OPENSSL REQUIRED IMPORTED_TARGET libevent_openssl)
pkg_check_modules(SSL REQUIRED IMPORTED_TARGET libssl)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(CRYPTO REQUIRED IMPORTED_TARGET libcrypto)
pkg_check_modules(EXPAT REQUIRED IMPORTED_TARGET expat)
pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
pkg_check_modules(URING REQUIRED IMPORTED_TARGET liburing)
pkg_check_modules(ROCKSDB REQUIRED IMPORTED_TARGET rocksdb)

# One interface target for warnings; every target links it PRIVATE.
add_library(ringcache_warnings INTERFACE)
target_compile_options(ringcache_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla
  -Wno-unused-parameter)
target_compile_definitions(ringcache_warnings INTERFACE _GNU_SOURCE)
if(RINGCACHE_WERROR)
  target_compile_options(ringcache_warnings INTERFACE -Werror)
endif()

# Sanitizers apply to everything in the build, libraries included.
if(RINGCACHE_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(RINGCACHE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT RINGCACHE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "RINGCACHE_SANITIZE must be empty, 'address' or 'thread', not '${RINGCACHE_SANITIZE}'")
endif()

if(RINGCACHE_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "RINGCACHE_FUZZ needs clang: configure with -DCMAKE_C_COMPILER=clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Environment every test sees: where the sources, the build and the npm tools are.
set(RINGCACHE_TEST_ENV
  "RINGCACHE_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "RINGCACHE_BUILD_DIR=${PROJECT_BINARY_DIR}"
  "RINGCACHE_NODE_MODULES=${PROJECT_SOURCE_DIR}/node_modules"
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
  "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1"
  # 'address', 'thread' or empty: tests repeat fewer rounds under a sanitizer (h_rounds)
  "RINGCACHE_TEST_SANITIZE=${RINGCACHE_SANITIZE}")

# ringcache_add_subdirectories() adds every sub-folder of the current source
# folder that has its own CMakeLists.txt (one per module or area), in name order.
macro(ringcache_add_subdirectories)
  file(GLOB _rc_subdirs LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
    ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _rc_subdirs)
  foreach(_rc_sub ${_rc_subdirs})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_rc_sub}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_rc_sub}/CMakeLists.txt)
      add_subdirectory(${_rc_sub})
    endif()
  endforeach()
endmacro()

# ringcache_test(NAME SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s] [ARGS ...])
# Declares one test binary and its ctest entry. Labels: unit, integration, slow,
# threads. Exit code 77 means "skipped" (the test prints why).
function(ringcache_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  if(RINGCACHE_FUZZ)
    return()
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} ringcache_warnings)
  if(CMOCKA_FOUND)
    target_link_libraries(${name} PRIVATE PkgConfig::CMOCKA)
  endif()
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES
    LABELS "${T_LABELS}"
    SKIP_RETURN_CODE 77
    TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "${RINGCACHE_TEST_ENV}")
  # For the build targets test_binaries and test_binaries_<label> (top-level CMakeLists.txt).
  set_property(GLOBAL APPEND PROPERTY RINGCACHE_TEST_TARGETS ${name})
  foreach(label ${T_LABELS})
    set_property(GLOBAL APPEND PROPERTY RINGCACHE_TEST_LABELS ${label})
    set_property(GLOBAL APPEND PROPERTY RINGCACHE_TEST_TARGETS_${label} ${name})
  endforeach()
endfunction()

# ringcache_node_test(NAME SOURCES ... LIBS ... [LABELS ...] [TIMEOUT s] [CLIENT])
# A test against real ringcached nodes: tests/integration's node_util.c and
# s3_test_util.c join its sources (with CLIENT also the client tests' cluster
# set-up, client_test_util.c, and RC_TEST_SANITIZED in sanitizer builds),
# their folders its include path, ringcached and s3model its dependencies.
function(ringcache_node_test name)
  cmake_parse_arguments(N "CLIENT" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  set(_it ${PROJECT_SOURCE_DIR}/tests/integration)
  set(_src ${N_SOURCES} ${_it}/cached/node_util.c ${_it}/s3/s3_test_util.c)
  set(_inc ${_it}/cached ${_it}/s3)
  if(N_CLIENT)
    list(APPEND _src ${_it}/client/client_test_util.c)
    list(APPEND _inc ${_it}/client)
  endif()
  if(NOT N_TIMEOUT)
    set(N_TIMEOUT 300)
  endif()
  ringcache_test(${name} SOURCES ${_src} LIBS ${N_LIBS} LABELS "${N_LABELS}" TIMEOUT ${N_TIMEOUT})
  if(NOT TARGET ${name})
    return()
  endif()
  target_include_directories(${name} PRIVATE ${_inc})
  if(N_CLIENT AND RINGCACHE_SANITIZE)
    target_compile_definitions(${name} PRIVATE RC_TEST_SANITIZED=1)
  endif()
  add_dependencies(${name} ringcached s3model)
endfunction()

# ringcache_fuzz(NAME SOURCES ... [LIBS ...]) declares a libFuzzer target; only
# built when RINGCACHE_FUZZ is on. A seed corpus may sit in tests/fuzz/corpus/NAME.
function(ringcache_fuzz name)
  cmake_parse_arguments(F "" "" "SOURCES;LIBS" ${ARGN})
  if(NOT RINGCACHE_FUZZ)
    return()
  endif()
  add_executable(${name} ${F_SOURCES})
  target_link_libraries(${name} PRIVATE ${F_LIBS} ringcache_warnings)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set_property(GLOBAL APPEND PROPERTY RINGCACHE_FUZZ_TARGETS ${name})
endfunction()

# nodejs/http-parser 2.9 (Debian libhttp-parser-dev) has no pkg-config file. Its
# static library is linked, so a binary needs no runtime package for it.
find_path(HTTP_PARSER_INCLUDE_DIR http_parser.h)
find_library(HTTP_PARSER_LIBRARY NAMES libhttp_parser.a http_parser)
if(NOT HTTP_PARSER_INCLUDE_DIR OR NOT HTTP_PARSER_LIBRARY)
  message(FATAL_ERROR "http_parser.h or libhttp_parser is missing: install Debian's "
                      "libhttp-parser-dev (scripts/setup.sh does)")
endif()
add_library(ringcache_http_parser INTERFACE)
target_include_directories(ringcache_http_parser SYSTEM INTERFACE ${HTTP_PARSER_INCLUDE_DIR})
target_link_libraries(ringcache_http_parser INTERFACE ${HTTP_PARSER_LIBRARY})
