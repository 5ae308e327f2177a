/*
 * bench_import.c: limits of the Kineto importer. Writes a synthetic but
 * realistic Kineto trace (default ~1 GB: the event mix, argument sets and
 * pretty-printing of PyTorch 2.x profiler output: CPU ops with shapes, CUDA
 * runtime calls, flow events, kernels with launch attributes, NCCL kernels
 * with c10d args, stream syncs, profiler steps) to a temporary file, imports
 * it through the public feed API one core, and prints MB/s, CPU time and
 * peak RSS (issue 19's targets: 1 GB/s per core, < 100 MB on 1 GB; the
 * figures reached are in docs/PERFORMANCE.md section 4). Not a test.
 *   bench_import [--mb N] [--gzip] [--keep] [--file PATH (import only)]
 *                [--chunk BYTES (feed size, default 1 MiB)] [--scw OUT.scw]
 * --chunk and --scw are for checking that an importer change leaves the job
 * byte-identical whatever the buffer boundaries.
 */
#include "stepcast/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static double now_s(int clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Output through stdio or zlib. */
typedef struct out {
  FILE *f;
  gzFile gz;
  long long bytes;
} out;

static void emit(out *o, const char *s, int n) {
  if (o->gz) gzwrite(o->gz, s, (unsigned)n);
  else fwrite(s, 1, (size_t)n, o->f);
  o->bytes += n;
}

#define EMIT(o, ...)                                   \
  do {                                                 \
    char line_[2048];                                  \
    int n_ = snprintf(line_, sizeof line_, __VA_ARGS__); \
    emit(o, line_, n_);                                \
  } while (0)

/* Kernel names of a transformer step (lengths as cuBLAS/cutlass/ATen emit). */
static const char *const kernels[] = {
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, true, false, false, false, true, true, false>(Flash_fwd_params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, {lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
};
static const char *const cpu_ops[] = {"aten::linear", "aten::add", "aten::layer_norm",
                                       "aten::_scaled_dot_product_flash_attention", "aten::gelu"};

/* Writes a trace of about `target` bytes: steps of layers of five ops. */
static void generate(out *o, long long target) {
  EMIT(o, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85045870592,\n"
          "      \"computeMajor\": 9, \"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
          "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n    }\n  ],\n"
          "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 64, \"pg_count\": 1, \"pg_config\": "
          "[{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": 64, \"ranks\": []}], "
          "\"nccl_version\": \"2.21.5\"},\n  \"record_shapes\": 1,\n  \"traceEvents\": [\n");
  long long ext = 1000, corr = 500000;
  int64_t t_ns = 1700000000000000000LL; /* epoch-sized timestamps, as Kineto writes */
  int64_t gpu_ns = t_ns;
  int step = 0;
  while (o->bytes < target) {
    int64_t step_start = t_ns;
    EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"pid\": 4242, \"tid\": 4242,\n"
            "    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n      \"External id\": %lld, \"Record function id\": 0, \"Ev Idx\": %lld\n    }\n  },\n",
         step, (long long)(t_ns / 1000), (long long)(t_ns % 1000), 180000LL, 0LL, ext, ext);
    ext++;
    for (int layer = 0; layer < 400; layer++) {
      for (int k = 0; k < 5; k++) {
        int64_t cpu = t_ns + 5123;
        EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 4242, \"tid\": 4242,\n"
                "    \"ts\": %lld.%03lld, \"dur\": 41.307,\n    \"args\": {\n      \"External id\": %lld, \"Record function id\": 0, "
                "\"Sequence number\": %lld, \"Fwd thread id\": 0, \"Ev Idx\": %lld,\n      \"Input Dims\": [[8, 2048, 4096], [4096, 4096], [4096]], "
                "\"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"], \"Input Strides\": [[8388608, 4096, 1], [4096, 1], [1]], "
                "\"Concrete Inputs\": [\"\", \"\", \"\"]\n    }\n  },\n",
             cpu_ops[k], (long long)(cpu / 1000), (long long)(cpu % 1000), ext, ext * 3, ext);
        /* Children and Python frames: real traces carry ~3 CPU-side events
         * per kernel (the HTA samples: 14,346 cpu_op for 2,700 kernels). */
        EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"torch/nn/modules/module.py(1747): _call_impl\", "
                "\"pid\": 4242, \"tid\": 4242,\n    \"ts\": %lld.%03lld, \"dur\": 52.914,\n    \"args\": {\n      \"Python parent id\": %lld, "
                "\"Python id\": %lld, \"Ev Idx\": %lld\n    }\n  },\n",
             (long long)((cpu - 900) / 1000), (long long)((cpu - 900) % 1000), ext - 1, ext, ext);
        for (int c = 0; c < 2; c++)
          EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 4242, \"tid\": 4242,\n"
                  "    \"ts\": %lld.%03lld, \"dur\": 3.118,\n    \"args\": {\n      \"External id\": %lld, \"Record function id\": 0, "
                  "\"Ev Idx\": %lld,\n      \"Input Dims\": [[4096, 4096], [], []], \"Input type\": [\"c10::BFloat16\", \"Scalar\", \"\"], "
                  "\"Input Strides\": [[4096, 1], [], []], \"Concrete Inputs\": [\"\", \"0\", \"\"]\n    }\n  },\n",
               c ? "aten::as_strided" : "aten::transpose", (long long)((cpu + 2000 + c * 4000) / 1000),
               (long long)((cpu + 2000 + c * 4000) % 1000), ext, ext);
        int64_t rt = cpu + 20417;
        EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 4242, \"tid\": 4242,\n"
                "    \"ts\": %lld.%03lld, \"dur\": 6.102,\n    \"args\": {\n      \"External id\": %lld, \"cbid\": 211, \"correlation\": %lld\n    }\n  },\n",
             (long long)(rt / 1000), (long long)(rt % 1000), ext, corr);
        EMIT(o, "  {\n    \"ph\": \"s\", \"id\": %lld, \"pid\": 4242, \"tid\": 4242, \"ts\": %lld.%03lld,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  },\n",
             corr, (long long)(rt / 1000), (long long)(rt % 1000));
        int64_t start = gpu_ns > rt + 8000 ? gpu_ns : rt + 8000;
        int64_t dur = k == 0 ? 412718 : k == 3 ? 233117 : 31559;
        EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7,\n"
                "    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n      \"External id\": %lld,\n      \"queued\": 0, \"device\": 0, \"context\": 1,\n"
                "      \"stream\": 7, \"correlation\": %lld,\n      \"registers per thread\": 168,\n      \"shared memory\": 213248,\n"
                "      \"blocks per SM\": 1.000000,\n      \"warps per SM\": 12.000000,\n      \"grid\": [132, 1, 1],\n      \"block\": [384, 1, 1],\n"
                "      \"est. achieved occupancy %%\": 19\n    }\n  },\n",
             kernels[k], (long long)(start / 1000), (long long)(start % 1000), (long long)(dur / 1000),
             (long long)(dur % 1000), ext, corr);
        EMIT(o, "  {\n    \"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": 7, \"ts\": %lld.%03lld,\n    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  },\n",
             corr, (long long)(start / 1000), (long long)(start % 1000));
        gpu_ns = start + dur;
        t_ns = rt + 9000;
        ext++;
        corr++;
      }
      if (layer % 50 == 49) { /* a gradient bucket: c10d all-reduce on the NCCL stream */
        int64_t ann = t_ns + 1000;
        EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 4242, \"tid\": 4242,\n"
                "    \"ts\": %lld.%03lld, \"dur\": 30.000,\n    \"args\": {\n      \"External id\": %lld, \"Collective name\": \"allreduce\", "
                "\"dtype\": \"BFloat16\", \"In msg nelems\": 26214400, \"Out msg nelems\": 26214400, \"Group size\": 64, "
                "\"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]\"\n    }\n  },\n",
             (long long)(ann / 1000), (long long)(ann % 1000), ext);
        int64_t rt = ann + 5000;
        EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernelExC\", \"pid\": 4242, \"tid\": 4242,\n"
                "    \"ts\": %lld.%03lld, \"dur\": 9.876,\n    \"args\": {\n      \"External id\": %lld, \"cbid\": 430, \"correlation\": %lld\n    }\n  },\n",
             (long long)(rt / 1000), (long long)(rt % 1000), ext, corr);
        int64_t start = gpu_ns + 1500;
        EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)\", \"pid\": 0, \"tid\": 20,\n"
                "    \"ts\": %lld.%03lld, \"dur\": 1803.511,\n    \"args\": {\n      \"External id\": %lld, \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 20, "
                "\"correlation\": %lld, \"registers per thread\": 96, \"shared memory\": 87568, \"grid\": [32, 1, 1], \"block\": [640, 1, 1],\n"
                "      \"Collective name\": \"allreduce\", \"In msg nelems\": 26214400, \"Out msg nelems\": 26214400, \"Group size\": 64, "
                "\"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Process Group Name\": \"0\", "
                "\"Process Group Description\": \"default_pg\", \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]\"\n    }\n  },\n",
             (long long)(start / 1000), (long long)(start % 1000), ext, corr);
        ext++;
        corr++;
        t_ns = rt + 12000;
      }
    }
    /* loss.item(): a copy and a stream synchronize at the end of the step. */
    EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 4242, \"tid\": 4242,\n"
            "    \"ts\": %lld.%03lld, \"dur\": 7.000,\n    \"args\": {\n      \"External id\": %lld, \"cbid\": 41, \"correlation\": %lld\n    }\n  },\n",
         (long long)(t_ns / 1000), (long long)(t_ns % 1000), ext, corr);
    EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", \"pid\": 0, \"tid\": 7,\n"
            "    \"ts\": %lld.%03lld, \"dur\": 1.216,\n    \"args\": {\n      \"External id\": %lld, \"device\": 0, \"context\": 1, \"stream\": 7, "
            "\"correlation\": %lld, \"bytes\": 4, \"memory bandwidth (GB/s)\": 0.0032\n    }\n  },\n",
         (long long)(gpu_ns / 1000), (long long)(gpu_ns % 1000), ext, corr);
    gpu_ns += 1216;
    corr++;
    EMIT(o, "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", \"pid\": 4242, \"tid\": 4242,\n"
            "    \"ts\": %lld.%03lld, \"dur\": %lld.%03lld,\n    \"args\": {\n      \"External id\": %lld, \"cbid\": 131, \"correlation\": %lld\n    }\n  },\n",
         (long long)((t_ns + 8000) / 1000), (long long)((t_ns + 8000) % 1000),
         (long long)((gpu_ns + 3000 - t_ns - 8000) / 1000), (long long)((gpu_ns + 3000 - t_ns - 8000) % 1000), ext, corr);
    corr++;
    ext++;
    t_ns = gpu_ns + 3000 > t_ns ? gpu_ns + 3000 : t_ns;
    (void)step_start;
    step++;
  }
  EMIT(o, "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\",\n    \"ts\": %lld.000\n  }\n],\n"
          "  \"traceName\": \"bench_import\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": 1700000000000000000\n}\n",
       (long long)(t_ns / 1000));
}

/* Counts the .scw bytes, and writes them when a file is open. */
typedef struct scw_out {
  long long bytes;
  FILE *f;
} scw_out;

static int count_sink(void *ud, const char *buf, size_t len) {
  scw_out *o = ud;
  o->bytes += (long long)len;
  if (o->f && fwrite(buf, 1, len, o->f) != len) return -1;
  return 0;
}

int main(int argc, char **argv) {
  long long mb = 1024;
  int gzip = 0, keep = 0;
  const char *file = NULL, *scw_path = NULL;
  size_t chunk = 1 << 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--mb") && i + 1 < argc) mb = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--gzip")) gzip = 1;
    else if (!strcmp(argv[i], "--keep")) keep = 1;
    else if (!strcmp(argv[i], "--file") && i + 1 < argc) file = argv[++i];
    else if (!strcmp(argv[i], "--scw") && i + 1 < argc) scw_path = argv[++i];
    else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) chunk = (size_t)atoll(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_import [--mb N] [--gzip] [--keep] [--file PATH] [--chunk BYTES] [--scw OUT]\n");
      return 2;
    }
  }
  char path[512];
  if (!file) {
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/bench_import_%d.json%s", tmp ? tmp : "/tmp", (int)getpid(),
             gzip ? ".gz" : "");
    out o = {0};
    if (gzip) o.gz = gzopen(path, "wb1");
    else o.f = fopen(path, "wb");
    if (!o.f && !o.gz) {
      fprintf(stderr, "bench_import: cannot write %s\n", path);
      return 1;
    }
    double g0 = now_s(CLOCK_MONOTONIC);
    generate(&o, mb * 1000000);
    if (o.gz) gzclose(o.gz);
    else fclose(o.f);
    printf("generated %s: %.1f MB of JSON in %.1f s\n", path, (double)o.bytes / 1e6, now_s(CLOCK_MONOTONIC) - g0);
    file = path;
  }
  sc_ctx *ctx;
  sc_job *job;
  if (sc_ctx_new(NULL, NULL, &ctx) || sc_job_new(ctx, &job)) return 1;
  FILE *f = fopen(file, "rb");
  if (!f) return 1;
  if (chunk < 1 || chunk > (1u << 30)) chunk = 1 << 20;
  /* Page-aligned, as the CLI's (cmd_trace.c): the kernel copies into it
   * three to four times faster than into malloc's block 16 bytes off a page. */
  size_t alloc = (chunk + 4095) / 4096 * 4096;
  unsigned char *buf = aligned_alloc(4096, alloc);
  if (!buf) return 1;
  double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
  sc_trace_reader *r;
  int rc = sc_trace_open(job, SC_TRACE_KINETO, file, 0, &r);
  size_t n;
  while (!rc && (n = fread(buf, 1, chunk, f)) > 0) rc = sc_trace_feed(r, buf, n);
  fclose(f);
  free(buf);
  if (!rc) rc = sc_trace_finish(r);
  uint64_t bytes = sc_trace_bytes(r);
  sc_trace_free(r);
  if (!rc) rc = sc_job_finish(job);
  scw_out scw = {0, NULL};
  if (scw_path && !(scw.f = fopen(scw_path, "wb"))) rc = 1;
  if (!rc) rc = sc_job_write(job, count_sink, &scw);
  if (scw.f && fclose(scw.f)) rc = 1;
  double wall = now_s(CLOCK_MONOTONIC) - w0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  if (rc) fprintf(stderr, "bench_import: %s\n", sc_errmsg(ctx));
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  sc_job_info info;
  sc_job_get_info(job, &info);
  printf("import: %.1f MB (decompressed) in %.2f s wall, %.2f s CPU: %.0f MB/s wall, %.0f MB/s CPU\n",
         (double)bytes / 1e6, wall, cpu, (double)bytes / 1e6 / wall, (double)bytes / 1e6 / cpu);
  printf("job: %lld ops (%lld GPU, %lld collectives, %lld host), %lld deps, %lld iterations; .scw %.1f MB\n",
         (long long)info.ops, (long long)info.gpu_ops, (long long)info.collectives, (long long)info.host_ops,
         (long long)info.deps, (long long)info.iterations, (double)scw.bytes / 1e6);
  printf("peak RSS: %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
  sc_job_free(job);
  sc_ctx_free(ctx);
  if (!keep && file == path) remove(path);
  return rc ? 1 : 0;
}
