# wan_tests.cmake: build and test wiring for the WAN building blocks (src/wan).
#
# Owns the ism_wan static library (CRC32C, link headers, gateway authentication, link
# encryption, socket helpers: bytes, no MPI) and its tests test_auth and test_aead; and
# the reliable-UDP library ism_udp with
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
  ${ISM_WAN_SRC_DIR}/crc32c.c
  ${ISM_WAN_SRC_DIR}/linkhdr.c
  ${ISM_WAN_SRC_DIR}/auth.c
  ${ISM_WAN_SRC_DIR}/auth_hs.c
  ${ISM_WAN_SRC_DIR}/aead.c
  ${ISM_WAN_SRC_DIR}/sstream.c
  ${ISM_WAN_SRC_DIR}/sealpool.c
  ${ISM_WAN_SRC_DIR}/sock.c)
target_include_directories(ism_wan PUBLIC ${ISM_WAN_SRC_DIR})
target_link_libraries(ism_wan PUBLIC OpenSSL::Crypto Threads::Threads)
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

add_executable(test_auth ${ISM_WAN_TEST_DIR}/test_auth.c)
target_link_libraries(test_auth PRIVATE ism_wan OpenSSL::Crypto Threads::Threads)
target_compile_definitions(test_auth PRIVATE _GNU_SOURCE)
target_compile_options(test_auth PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_auth PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_auth COMMAND test_auth)
# Uses loopback TCP ports, so it must not overlap with other port-hungry tests.
set_tests_properties(test_auth PROPERTIES TIMEOUT 120 RESOURCE_LOCK ism_loopback_ports)

include(${CMAKE_CURRENT_LIST_DIR}/../cmake/IsmFuzz.cmake)

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
  ${ISM_UDP_SRC_DIR}/setup_msg.c
  ${ISM_UDP_SRC_DIR}/seal.c
  ${ISM_UDP_SRC_DIR}/sealbatch.c
  ${ISM_UDP_SRC_DIR}/api.c)
target_include_directories(ism_udp PUBLIC ${ISM_UDP_SRC_DIR} ${ISM_WAN_SRC_DIR})
target_link_libraries(ism_udp PUBLIC ism_wan ism_common OpenSSL::Crypto m)
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

ism_fuzz_target(fuzz_udp_wire OWN_DRIVER SOURCES ${ISM_WAN_TEST_DIR}/fuzz_udp_wire.c LIBS ism_udp DEFINES _GNU_SOURCE
                SMOKE_ARGS 4000)

add_executable(test_udp_loopback ${ISM_WAN_TEST_DIR}/test_udp_loopback.c)
target_include_directories(test_udp_loopback PRIVATE ${ISM_WAN_TEST_DIR}/../tools/udpperf)
target_link_libraries(test_udp_loopback PRIVATE ism_udp Threads::Threads)
target_compile_definitions(test_udp_loopback PRIVATE _GNU_SOURCE)
target_compile_options(test_udp_loopback PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_udp_loopback PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_udp_loopback COMMAND test_udp_loopback)
set_tests_properties(test_udp_loopback PROPERTIES TIMEOUT 300 RESOURCE_LOCK ism_loopback_ports)

# The handshake's state machine, as a stranger and as a man in the middle would drive it.
ism_fuzz_target(fuzz_auth_hs SOURCES ${CMAKE_CURRENT_LIST_DIR}/../fuzz/fuzz_auth_hs.c
                LIBS ism_wan SMOKE_ARGS 20000)

# The reliable-UDP set-up messages (after authentication, before any UDP socket).
ism_fuzz_target(fuzz_udp_setup SOURCES ${CMAKE_CURRENT_LIST_DIR}/../fuzz/fuzz_udp_setup.c
                LIBS ism_udp SMOKE_ARGS 200000)

# Link encryption: keys, records, key update, replay window, the record stream, suites.
add_executable(test_aead ${ISM_WAN_TEST_DIR}/test_aead.c)
target_link_libraries(test_aead PRIVATE ism_wan OpenSSL::Crypto)
target_compile_definitions(test_aead PRIVATE _GNU_SOURCE)
target_compile_options(test_aead PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_aead PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_aead COMMAND test_aead)

add_executable(test_sealpool ${ISM_WAN_TEST_DIR}/test_sealpool.c)
target_link_libraries(test_sealpool PRIVATE ism_wan OpenSSL::Crypto Threads::Threads)
target_compile_definitions(test_sealpool PRIVATE _GNU_SOURCE)
target_compile_options(test_sealpool PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_sealpool PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_sealpool COMMAND test_sealpool)
set_tests_properties(test_sealpool PROPERTIES TIMEOUT 300)

# Opening what crosses a link encrypted: TCP records and sealed UDP datagrams.
ism_fuzz_target(fuzz_unseal SOURCES ${CMAKE_CURRENT_LIST_DIR}/../fuzz/fuzz_unseal.c
                LIBS ism_udp SMOKE_ARGS 3000)

# Not a test: what the crypto workers take off the sealing thread (bench/notebook/link-crypto.md).
add_executable(bench_sealpool ${ISM_WAN_TEST_DIR}/bench_sealpool.c)
target_link_libraries(bench_sealpool PRIVATE ism_udp ism_wan OpenSSL::Crypto Threads::Threads)
target_compile_definitions(bench_sealpool PRIVATE _GNU_SOURCE)
target_compile_options(bench_sealpool PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(bench_sealpool PROPERTIES ${ISM_WAN_TEST_PROPS})

# Reliable-UDP datagrams sealed and opened in batches on crypto workers (sealbatch.c).
add_executable(test_udp_sealbatch ${ISM_WAN_TEST_DIR}/test_udp_sealbatch.c)
target_link_libraries(test_udp_sealbatch PRIVATE ism_udp Threads::Threads)
target_compile_definitions(test_udp_sealbatch PRIVATE _GNU_SOURCE)
target_compile_options(test_udp_sealbatch PRIVATE ${ISM_WAN_WARNINGS})
set_target_properties(test_udp_sealbatch PROPERTIES ${ISM_WAN_TEST_PROPS})
add_test(NAME test_udp_sealbatch COMMAND test_udp_sealbatch)
