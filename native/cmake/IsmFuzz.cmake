# IsmFuzz.cmake: fuzz targets (native/fuzz/fuzz.h), each built two ways.
#
# ism_fuzz_target(<name> SOURCES src... [INCLUDES dir...] [LIBS lib...] [DEFINES def...]
#                 [SMOKE_ARGS arg...] [OWN_DRIVER])
#   <name>_smoke, with the project's compiler: the harness and native/fuzz/fuzz_main.c's
#     deterministic driver (OWN_DRIVER: the harness's own, under -DISM_FUZZ_STANDALONE);
#     CTest runs it as <name>_smoke [SMOKE_ARGS].
#   With ISM_FUZZ_LIBFUZZER=ON in a build configured with clang (scripts/test.sh makes
#     build-fuzz/ so): <name>, coverage-guided with libFuzzer under ASan and UBSan, and
#     the CTest test libfuzzer_<name> (label "libfuzzer") that runs it for
#     ISM_FUZZ_SECONDS from the seeds <name>_smoke writes (an empty corpus with
#     OWN_DRIVER), keeping any crashing input in <build>/fuzz-artifacts/.
option(ISM_FUZZ_LIBFUZZER "Build the libFuzzer fuzz targets (configure with CC=clang)" OFF)
set(ISM_FUZZ_SECONDS 20 CACHE STRING "How long each libfuzzer_* CTest test fuzzes")
set(ISM_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR}/../fuzz)
set(ISM_FUZZ_OK FALSE)
if(ISM_FUZZ_LIBFUZZER)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ISM_FUZZ_LIBFUZZER needs clang as the C compiler: configure a "
                        "separate build with CC=clang (scripts/test.sh uses build-fuzz/)")
  endif()
  set(ISM_FUZZ_FLAGS -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
  set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer")
  check_c_source_compiles("#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }" ISM_FUZZ_LINKS)
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT ISM_FUZZ_LINKS)
    message(FATAL_ERROR "ISM_FUZZ_LIBFUZZER: clang cannot link -fsanitize=fuzzer; install "
                        "clang's runtime (Debian: libclang-rt-14-dev)")
  endif()
  set(ISM_FUZZ_OK TRUE)
  # Everything in this build is instrumented, so coverage reaches the libraries the
  # harnesses call; only the fuzz targets (fuzz_all) are meant to be built here.
  add_compile_options(-g -O1 -fsanitize=fuzzer-no-link,address,undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(NOT TARGET fuzz_all)
  add_custom_target(fuzz_all)
endif()

function(ism_fuzz_target name)
  cmake_parse_arguments(F "OWN_DRIVER" "" "SOURCES;INCLUDES;LIBS;DEFINES;SMOKE_ARGS" ${ARGN})
  set(smoke ${name}_smoke)
  if(F_OWN_DRIVER)
    add_executable(${smoke} ${F_SOURCES} ${ISM_FUZZ_DIR}/fuzz_fail.c)
    target_compile_definitions(${smoke} PRIVATE ISM_FUZZ_STANDALONE)
  else()
    add_executable(${smoke} ${F_SOURCES} ${ISM_FUZZ_DIR}/fuzz_main.c ${ISM_FUZZ_DIR}/fuzz_fail.c)
  endif()
  target_include_directories(${smoke} PRIVATE ${ISM_FUZZ_DIR} ${F_INCLUDES})
  target_link_libraries(${smoke} PRIVATE ${F_LIBS})
  target_compile_definitions(${smoke} PRIVATE ${F_DEFINES})
  set_target_properties(${smoke} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
  add_test(NAME ${smoke} COMMAND ${smoke} ${F_SMOKE_ARGS})
  add_dependencies(fuzz_all ${smoke})
  set_tests_properties(${smoke} PROPERTIES TIMEOUT 600)
  if(NOT ISM_FUZZ_OK)
    return()
  endif()
  add_executable(${name} ${F_SOURCES} ${ISM_FUZZ_DIR}/fuzz_fail.c)
  target_include_directories(${name} PRIVATE ${ISM_FUZZ_DIR} ${F_INCLUDES})
  target_link_libraries(${name} PRIVATE ${F_LIBS})
  target_compile_definitions(${name} PRIVATE ${F_DEFINES})
  target_compile_options(${name} PRIVATE ${ISM_FUZZ_FLAGS})
  target_link_options(${name} PRIVATE ${ISM_FUZZ_FLAGS})
  set_target_properties(${name} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  add_dependencies(fuzz_all ${name})
  set(corpus ${CMAKE_BINARY_DIR}/fuzz-corpus/${name})
  set(art ${CMAKE_BINARY_DIR}/fuzz-artifacts)
  if(F_OWN_DRIVER)
    set(seed_cmd "mkdir -p '${corpus}'")
  else()
    set(seed_cmd "'$<TARGET_FILE:${smoke}>' --write-seeds '${corpus}'")
  endif()
  add_test(NAME libfuzzer_${name}
    COMMAND sh -c "mkdir -p '${art}' && ${seed_cmd} && '$<TARGET_FILE:${name}>' '${corpus}' -max_total_time=${ISM_FUZZ_SECONDS} -print_final_stats=1 -artifact_prefix='${art}/${name}-'")
  math(EXPR _limit "${ISM_FUZZ_SECONDS} * 3 + 60")
  set_tests_properties(libfuzzer_${name} PROPERTIES LABELS libfuzzer TIMEOUT ${_limit})
endfunction()
