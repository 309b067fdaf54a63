# wan_tests.cmake: build and test wiring for the WAN building blocks (src/wan).
#
# Owns the ism_wan static library (frames, gateway authentication, socket helpers) and
# its tests: test_frame, test_frame_portable_crc, test_auth and fuzz_frame_smoke, plus
# the optional libFuzzer binary fuzz_frame; and the reliable-UDP library ism_udp with
# test_udp_wire, test_udp_cc, fuzz_udp_wire_smoke (libFuzzer: fuzz_udp_wire), test_udp_loopback. Meant to be include()d from native/CMakeLists.txt,
# which provides cmake_minimum_required(VERSION 3.20) and enable_testing().

include_guard(GLOBAL)

# Captured once: CMAKE_CURRENT_LIST_DIR means this file only while it is being read.
set(ISM_WAN_SRC_DIR "${CMAKE_CURRENT_LIST_DIR}/../src/wan")
set(ISM_WAN_TEST_DIR "${CMAKE_CURRENT_LIST_DIR}")
cmake_path(NORMAL_PATH ISM_WAN_SRC_DIR)

if(NOT CMAKE_C_COMPILER_LOADED)
  enable_language(C)
endif()

# The including project may already have looked these up; a second find_package of
# OpenSSL in the same scope is harmless but the guard keeps its cached choice.
if(NOT TARGET OpenSSL::Crypto)
  find_package(OpenSSL REQUIRED)
endif()
if(NOT TARGET Threads::Threads)
  find_package(Threads REQUIRED)
endif()

set(ISM_WAN_WARNINGS $<$<C_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra>)

add_library(ism_wan STATIC
  ${ISM_WAN_SRC_DIR}/frame.c
  ${ISM_WAN_SRC_DIR}/linkhdr.c
  ${ISM_WAN_SRC_DIR}/auth.c
  ${ISM_WAN_SRC_DIR}/auth_hs.c
  ${ISM_WAN_SRC_DIR}/sock.c)
target_include_directories(ism_wan PUBLIC ${ISM_WAN_SRC_DIR})
target_link_libraries(ism_wan PUBLIC OpenSSL::Crypto)
target_compile_definitions(ism_wan PRIVATE _GNU_SOURCE)
target_compile_options(ism_wan PRIVATE ${ISM_WAN_WARNINGS})
# PIC because the library ends up inside the shared MPI wrapper libraries.
set_target_properties(ism_wan PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  C_STANDARD 11
  C_STANDARD_REQUIRED ON
  C_EXTENSIONS OFF)

# Common settings for the test programs below.
set(ISM_WAN_TEST_PROPS C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)

add_executable(test_frame ${ISM_WAN_TEST_DIR}/test_frame.c)
target_link_libraries(test_frame PRIVATE ism_wan)
target_compile_definitions(test_frame PRIVATE _GNU_SOURCE)
target_compile_options(test_frame PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_frame PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_frame COMMAND test_frame)

# Same checks against the portable CRC32C table: on SSE4.2 hosts the library never
# takes that path, so without this build a broken table would go unnoticed.
add_executable(test_frame_portable_crc
  ${ISM_WAN_TEST_DIR}/test_frame.c
  ${ISM_WAN_SRC_DIR}/frame.c
  ${ISM_WAN_SRC_DIR}/linkhdr.c)
target_include_directories(test_frame_portable_crc PRIVATE ${ISM_WAN_SRC_DIR})
target_compile_definitions(test_frame_portable_crc PRIVATE _GNU_SOURCE ISM_CRC32C_NO_HW)
target_compile_options(test_frame_portable_crc PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_frame_portable_crc PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_frame_portable_crc COMMAND test_frame_portable_crc)

add_executable(test_auth ${ISM_WAN_TEST_DIR}/test_auth.c)
target_link_libraries(test_auth PRIVATE ism_wan OpenSSL::Crypto Threads::Threads)
target_compile_definitions(test_auth PRIVATE _GNU_SOURCE)
target_compile_options(test_auth PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_auth PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_auth COMMAND test_auth)
# Uses loopback TCP ports, so it must not overlap with other port-hungry tests.
set_tests_properties(test_auth PROPERTIES TIMEOUT 120 RESOURCE_LOCK ism_loopback_ports)

add_executable(fuzz_frame_smoke ${ISM_WAN_TEST_DIR}/fuzz_frame.c)
target_link_libraries(fuzz_frame_smoke PRIVATE ism_wan)
target_compile_definitions(fuzz_frame_smoke PRIVATE _GNU_SOURCE ISM_FUZZ_STANDALONE)
target_compile_options(fuzz_frame_smoke PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(fuzz_frame_smoke PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME fuzz_frame_smoke COMMAND fuzz_frame_smoke)
set_tests_properties(fuzz_frame_smoke PROPERTIES TIMEOUT 600)

# Coverage-guided fuzzing needs clang's libFuzzer runtime. Build it with the project's
# compiler when that is clang, otherwise with a clang found on PATH via a custom command,
# and only after proving -fsanitize=fuzzer links, so a missing runtime is a warning
# at configure time rather than a broken build. The binary lands in <build>/fuzz/.
option(ISM_FUZZ_LIBFUZZER "Build the fuzz_frame libFuzzer binary (needs clang)" OFF)
if(ISM_FUZZ_LIBFUZZER)
  set(ISM_FUZZ_FLAGS -g -O1 -fsanitize=fuzzer,address,undefined)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    set(ISM_FUZZ_CLANG "${CMAKE_C_COMPILER}")
  else()
    find_program(ISM_FUZZ_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
  endif()
  set(ISM_FUZZ_OK FALSE)
  if(ISM_FUZZ_CLANG)
    set(_probe_dir "${CMAKE_CURRENT_BINARY_DIR}/ism_fuzz_probe")
    file(MAKE_DIRECTORY "${_probe_dir}")
    file(WRITE "${_probe_dir}/probe.c"
      "#include <stddef.h>\n#include <stdint.h>\n"
      "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
    execute_process(
      COMMAND "${ISM_FUZZ_CLANG}" ${ISM_FUZZ_FLAGS} "${_probe_dir}/probe.c" -o "${_probe_dir}/probe"
      RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_QUIET)
    if(_probe_rc EQUAL 0)
      set(ISM_FUZZ_OK TRUE)
    else()
      message(WARNING "ISM_FUZZ_LIBFUZZER: ${ISM_FUZZ_CLANG} cannot link -fsanitize=fuzzer "
                      "(install clang's runtime, e.g. libclang-rt-dev); fuzz_frame not built")
    endif()
  else()
    message(WARNING "ISM_FUZZ_LIBFUZZER is ON but clang was not found; fuzz_frame not built")
  endif()

  if(ISM_FUZZ_OK AND CMAKE_C_COMPILER_ID MATCHES "Clang")
    add_executable(fuzz_frame ${ISM_WAN_TEST_DIR}/fuzz_frame.c ${ISM_WAN_SRC_DIR}/frame.c ${ISM_WAN_SRC_DIR}/linkhdr.c)
    target_include_directories(fuzz_frame PRIVATE ${ISM_WAN_SRC_DIR})
    target_compile_definitions(fuzz_frame PRIVATE _GNU_SOURCE)
    target_compile_options(fuzz_frame PRIVATE ${ISM_FUZZ_FLAGS} ${ISM_WAN_WARNINGS})
    target_link_options(fuzz_frame PRIVATE ${ISM_FUZZ_FLAGS})
    set_target_properties(fuzz_frame PROPERTIES ${ISM_WAN_TEST_PROPS}
      RUNTIME_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/fuzz")
  elseif(ISM_FUZZ_OK)
    # In a subdirectory: an output file named like its target confuses the Makefile
    # generator ("circular dependency dropped").
    set(_fuzz_out "${CMAKE_CURRENT_BINARY_DIR}/fuzz/fuzz_frame")
    file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/fuzz")
    add_custom_command(
      OUTPUT "${_fuzz_out}"
      COMMAND "${ISM_FUZZ_CLANG}" -std=c11 -D_GNU_SOURCE -Wall -Wextra ${ISM_FUZZ_FLAGS}
              -I${ISM_WAN_SRC_DIR} ${ISM_WAN_TEST_DIR}/fuzz_frame.c ${ISM_WAN_SRC_DIR}/frame.c ${ISM_WAN_SRC_DIR}/linkhdr.c
              -o "${_fuzz_out}"
      DEPENDS ${ISM_WAN_TEST_DIR}/fuzz_frame.c ${ISM_WAN_SRC_DIR}/frame.c ${ISM_WAN_SRC_DIR}/linkhdr.c
              ${ISM_WAN_SRC_DIR}/frame.h
      COMMENT "Building libFuzzer target fuzz_frame with ${ISM_FUZZ_CLANG}"
      VERBATIM)
    add_custom_target(fuzz_frame ALL DEPENDS "${_fuzz_out}")
  endif()
endif()

# libFuzzer build of the reliable-UDP fuzz target (same conditions as fuzz_frame above).
if(ISM_FUZZ_LIBFUZZER AND ISM_FUZZ_OK)
  file(GLOB ISM_UDP_FUZZ_SRC ${ISM_WAN_SRC_DIR}/udp/*.c)
  set(_udp_fuzz_out "${CMAKE_CURRENT_BINARY_DIR}/fuzz/fuzz_udp_wire")
  add_custom_command(
    OUTPUT "${_udp_fuzz_out}"
    COMMAND "${ISM_FUZZ_CLANG}" -std=c11 -D_GNU_SOURCE -Wall -Wextra ${ISM_FUZZ_FLAGS}
            -I${ISM_WAN_SRC_DIR} -I${ISM_WAN_SRC_DIR}/udp ${ISM_WAN_TEST_DIR}/fuzz_udp_wire.c
            ${ISM_UDP_FUZZ_SRC} ${ISM_WAN_SRC_DIR}/frame.c ${ISM_WAN_SRC_DIR}/auth.c ${ISM_WAN_SRC_DIR}/auth_hs.c
            ${ISM_WAN_SRC_DIR}/sock.c -lcrypto -lm -o "${_udp_fuzz_out}"
    DEPENDS ${ISM_WAN_TEST_DIR}/fuzz_udp_wire.c ${ISM_UDP_FUZZ_SRC}
    COMMENT "Building libFuzzer target fuzz_udp_wire with ${ISM_FUZZ_CLANG}"
    VERBATIM)
  add_custom_target(fuzz_udp_wire ALL DEPENDS "${_udp_fuzz_out}")
endif()

# ---- Reliable UDP transport (src/wan/udp, issue 7) ----
set(ISM_UDP_SRC_DIR "${ISM_WAN_SRC_DIR}/udp")
add_library(ism_udp STATIC
  ${ISM_UDP_SRC_DIR}/wire.c
  ${ISM_UDP_SRC_DIR}/cc.c
  ${ISM_UDP_SRC_DIR}/cc_bbr.c
  ${ISM_UDP_SRC_DIR}/cc_reno.c
  ${ISM_UDP_SRC_DIR}/send.c
  ${ISM_UDP_SRC_DIR}/recv.c
  ${ISM_UDP_SRC_DIR}/io.c
  ${ISM_UDP_SRC_DIR}/pmtu.c
  ${ISM_UDP_SRC_DIR}/engine.c
  ${ISM_UDP_SRC_DIR}/setup.c
  ${ISM_UDP_SRC_DIR}/api.c)
target_include_directories(ism_udp PUBLIC ${ISM_UDP_SRC_DIR} ${ISM_WAN_SRC_DIR})
target_link_libraries(ism_udp PUBLIC ism_wan OpenSSL::Crypto m)
target_compile_definitions(ism_udp PRIVATE _GNU_SOURCE)
target_compile_options(ism_udp PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(ism_udp PROPERTIES POSITION_INDEPENDENT_CODE ON ${ISM_WAN_TEST_PROPS})

add_executable(test_udp_wire ${ISM_WAN_TEST_DIR}/test_udp_wire.c)
target_link_libraries(test_udp_wire PRIVATE ism_udp)
target_compile_options(test_udp_wire PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_udp_wire PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_udp_wire COMMAND test_udp_wire)

# The model-based controller's rules, on synthetic rounds of acknowledgements.
add_executable(test_udp_cc ${ISM_WAN_TEST_DIR}/test_udp_cc.c)
target_link_libraries(test_udp_cc PRIVATE ism_udp)
target_compile_options(test_udp_cc PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_udp_cc PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_udp_cc COMMAND test_udp_cc)

add_executable(fuzz_udp_wire_smoke ${ISM_WAN_TEST_DIR}/fuzz_udp_wire.c)
target_link_libraries(fuzz_udp_wire_smoke PRIVATE ism_udp)
target_compile_definitions(fuzz_udp_wire_smoke PRIVATE _GNU_SOURCE ISM_FUZZ_STANDALONE)
target_compile_options(fuzz_udp_wire_smoke PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(fuzz_udp_wire_smoke PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME fuzz_udp_wire_smoke COMMAND fuzz_udp_wire_smoke 4000)
set_tests_properties(fuzz_udp_wire_smoke PROPERTIES TIMEOUT 600)

add_executable(test_udp_loopback ${ISM_WAN_TEST_DIR}/test_udp_loopback.c)
target_include_directories(test_udp_loopback PRIVATE ${ISM_WAN_TEST_DIR}/../tools/udpperf)
target_link_libraries(test_udp_loopback PRIVATE ism_udp Threads::Threads)
target_compile_definitions(test_udp_loopback PRIVATE _GNU_SOURCE)
target_compile_options(test_udp_loopback PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_udp_loopback PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_udp_loopback COMMAND test_udp_loopback)
set_tests_properties(test_udp_loopback PROPERTIES TIMEOUT 300 RESOURCE_LOCK ism_loopback_ports)
