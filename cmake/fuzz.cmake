# fuzz.cmake: the parser fuzz harnesses of tests/fuzz/ (one per reader:
# config, set, caseset, nccltests, calib, hf, megatron, gpu, kineto, cpu, chakra, scw; chrome
# compares the Chrome-trace reader's in-place and token paths), included
# at the end of CMakeLists.txt. With SC_FUZZ (clang) each becomes a libFuzzer
# binary fuzz_<name> (`make fuzz`); in every build with tests each is also
# linked with tests/fuzz/replay_main.c, without libFuzzer, as fuzzrep_<name>,
# and ctest `fuzz.<name>` replays tests/fuzz/corpus-<name>/ (seeds and every
# crash or timeout input found) through it under the build's sanitizers.

set(SC_FUZZERS config set caseset nccltests calib hf megatron gpu kineto cpu chakra scw chrome)

foreach(name ${SC_FUZZERS})
  set(src ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c)
  if(SC_FUZZ)
    add_executable(fuzz_${name} ${src})
    target_link_libraries(fuzz_${name} PRIVATE stepcast)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_include_directories(fuzz_${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  endif()
  if(SC_BUILD_TESTS)
    add_executable(fuzzrep_${name} ${src} ${PROJECT_SOURCE_DIR}/tests/fuzz/replay_main.c)
    target_link_libraries(fuzzrep_${name} PRIVATE stepcast)
    target_include_directories(fuzzrep_${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
    add_test(NAME fuzz.${name} COMMAND fuzzrep_${name} ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus-${name})
    set_tests_properties(fuzz.${name} PROPERTIES TIMEOUT 300)
  endif()
endforeach()
if(SC_FUZZ)
  add_custom_target(fuzzers)
  foreach(name ${SC_FUZZERS})
    add_dependencies(fuzzers fuzz_${name})
  endforeach()
endif()
