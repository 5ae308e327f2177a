# trace.cmake: build pieces of profile-and-predict (trace import, .scw, replay),
# included at the end of CMakeLists.txt: the Chakra and Perfetto protobuf
# schemas compiled with protoc-c, the zstd and protobuf-c libraries, the import benchmark and
# the CLI-level trace tests.

find_program(SC_PROTOC_C protoc-c REQUIRED)
set(SC_PROTO_OUT ${PROJECT_BINARY_DIR}/proto)
file(MAKE_DIRECTORY ${SC_PROTO_OUT})
# Our protobuf schemas: Chakra's execution trace (import) and the subset of
# Perfetto's trace format that `run --trace FILE.pftrace` writes.
foreach(proto trace/chakra_et engine/perfetto_trace)
  get_filename_component(pdir ${PROJECT_SOURCE_DIR}/src/${proto}.proto DIRECTORY)
  get_filename_component(pname ${proto} NAME)
  add_custom_command(
    OUTPUT ${SC_PROTO_OUT}/${pname}.pb-c.c ${SC_PROTO_OUT}/${pname}.pb-c.h
    COMMAND ${SC_PROTOC_C} --c_out=${SC_PROTO_OUT} -I${pdir} ${pdir}/${pname}.proto
    DEPENDS ${pdir}/${pname}.proto
    COMMENT "protoc-c ${pname}.proto")
  target_sources(stepcast PRIVATE ${SC_PROTO_OUT}/${pname}.pb-c.c)
  # Generated code: not held to our warning flags.
  set_source_files_properties(${SC_PROTO_OUT}/${pname}.pb-c.c PROPERTIES COMPILE_OPTIONS "-w")
endforeach()
target_include_directories(stepcast PRIVATE ${SC_PROTO_OUT})
target_link_libraries(stepcast PUBLIC PkgConfig::ZSTD PkgConfig::PROTOBUF_C)

add_executable(bench_import bench/bench_import.c)
target_link_libraries(bench_import PRIVATE stepcast)
target_include_directories(bench_import PRIVATE ${PROJECT_SOURCE_DIR}/src)

if(SC_BUILD_TESTS)
  # test_pftrace decodes the .pftrace with the generated unpack.
  target_include_directories(test_pftrace PRIVATE ${SC_PROTO_OUT})
  add_test(NAME trace.replay COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/run.sh
           $<TARGET_FILE:stepcast_cli> ${PROJECT_SOURCE_DIR})
  # Ex-situ: CPU tracing with python3-torch (skipped, exit 77, without it)
  # and the DDP accuracy guard on the shipped CPU traces.
  add_test(NAME trace.torch_cpu COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/torch_cpu.sh
           $<TARGET_FILE:stepcast_cli>)
  set_tests_properties(trace.torch_cpu PROPERTIES SKIP_RETURN_CODE 77)
  add_test(NAME trace.ddp COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/ddp.sh
           $<TARGET_FILE:stepcast_cli>)
  # Per-rank shard traces against graph rewriting (no torch needed).
  add_test(NAME trace.shards COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/shards.sh
           $<TARGET_FILE:stepcast_cli>)
  # Layer-count extrapolation: 2 traced layers run as 4 against 4 traced.
  add_test(NAME trace.layers COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/layers.sh
           $<TARGET_FILE:stepcast_cli>)
  # GPU (Kineto) traces with module annotations: paths, passes, --layers.
  add_test(NAME trace.kineto_modules COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/kineto_modules.sh
           $<TARGET_FILE:stepcast_cli>)
  # The measured H200 training steps: in-situ replay and ex-situ pricing.
  add_test(NAME trace.h200 COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/h200.sh
           $<TARGET_FILE:stepcast_cli>)
  # torchtitan-style traces on meta tensors: fused attention, recompute (torch needed).
  add_test(NAME trace.meta COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/meta.sh
           $<TARGET_FILE:stepcast_cli>)
  set_tests_properties(trace.meta PROPERTIES SKIP_RETURN_CODE 77)
  # Ex-situ accuracy against torchtitan's bf16 rows (torch needed).
  add_test(NAME trace.titan COMMAND ${PROJECT_SOURCE_DIR}/tests/trace/titan.sh
           $<TARGET_FILE:stepcast_cli>)
  set_tests_properties(trace.titan PROPERTIES SKIP_RETURN_CODE 77)
endif()
