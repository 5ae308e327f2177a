/*
 * cmd_hw.c: the reference commands: `hw list` and `hw show NAME` (GPU
 * presets, include/stepcast/stepcast.h's sc_hw table), `presets` (model
 * presets) and `config-docs` (docs/CONFIG.md from the config field table).
 * Printing only.
 */
#include "stepcast/stepcast.h"

#include "commands.h"

#include <stdio.h>
#include <string.h>

/* Reads cmd's arguments into at most one positional (*arg, when arg is not
 * NULL); returns an exit code to stop with, or -1 to go on. */
static int arguments(const sc_cli_cmd *cmd, int argc, char **argv, const char **arg) {
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r;
  while ((r = sc_cli_next(&a)) > 0) {
    if (a.opt) return sc_cli_unhandled(&a);
    if (!arg || *arg) return sc_cli_usage_error(cmd, "unexpected argument %s", a.value);
    *arg = a.value;
  }
  return r < 0 ? a.exit : -1;
}

int sc_cli_hw_list(const sc_cli_cmd *cmd, int argc, char **argv) {
  int code = arguments(cmd, argc, argv, NULL);
  if (code >= 0) return code;
  int width = 12; /* the longest preset name */
  for (size_t i = 0; i < sc_hw_count(); i++) {
    int n = (int)strlen(sc_hw_at(i)->name);
    if (n > width) width = n;
  }
  printf("%-*s %9s %9s %8s %8s  %s\n", width, "name", "bf16 TF", "fp8 TF", "HBM GiB",
         "HBM GB/s", "description");
  for (size_t i = 0; i < sc_hw_count(); i++) {
    const sc_hw *hw = sc_hw_at(i);
    printf("%-*s %9.1f %9.1f %8.0f %8.0f  %s\n", width, hw->name, hw->bf16_tflops,
           hw->fp8_tflops, hw->hbm_gib, hw->hbm_gbps, hw->description);
  }
  return 0;
}

int sc_cli_hw_show(const sc_cli_cmd *cmd, int argc, char **argv) {
  const char *name = NULL;
  int yaml = 0;
  sc_cli_args a;
  sc_cli_args_init(&a, cmd, argc, argv);
  int r;
  while ((r = sc_cli_next(&a)) > 0) {
    if (!a.opt) {
      if (name) return sc_cli_usage_error(cmd, "unexpected argument %s", a.value);
      name = a.value;
    } else if (sc_cli_is(&a, "--format")) yaml = a.choice == 1;
    else return sc_cli_unhandled(&a);
  }
  if (r < 0) return a.exit;
  if (!name) return sc_cli_usage_error(cmd, "missing NAME (see `stepcast hw list`)");
  const sc_hw *hw = sc_hw_find(name);
  if (!hw)
    return sc_cli_error(sc_exit_code(SC_EINVAL), "unknown gpu \"%s\" (see `stepcast hw list`)",
                        name);
  if (yaml) { /* a GPU file: edit a copy to describe another GPU (cluster.gpu: FILE) */
    int rc = sc_hw_write_yaml(hw, sc_cli_write_file, stdout);
    if (rc || fflush(stdout)) return sc_cli_write_error("stdout", 1);
    return 0;
  }
  printf("%s: %s\n", hw->name, hw->description);
  printf("  peak dense   fp32 %.1f  tf32 %.1f  bf16/fp16 %.1f  fp8 %.1f TFLOP/s\n", hw->fp32_tflops,
         hw->tf32_tflops, hw->bf16_tflops, hw->fp8_tflops);
  printf("  memory       %.0f GiB at %.0f GB/s, %d SMs\n", hw->hbm_gib, hw->hbm_gbps, hw->sms);
  printf("  links        NVLink %.0f GB/s per direction, NIC %.0f Gb/s per GPU, %d GPUs/node\n",
         hw->nvlink_gbps, hw->nic_gbps, hw->gpus_per_node);
  if (hw->host_link_gbps > 0)
    printf("  host         %.0f GB/s per direction to host memory, host DRAM %.1f GB/s per GPU\n",
           hw->host_link_gbps, hw->host_mem_gbps);
  printf("  source       %s\n", hw->source);
  return 0;
}

int sc_cli_presets(const sc_cli_cmd *cmd, int argc, char **argv) {
  int code = arguments(cmd, argc, argv, NULL);
  if (code >= 0) return code;
  for (size_t i = 0; i < sc_model_preset_count(); i++) printf("%s\n", sc_model_preset_name(i));
  return 0;
}

int sc_cli_config_docs(const sc_cli_cmd *cmd, int argc, char **argv) {
  int code = arguments(cmd, argc, argv, NULL);
  if (code >= 0) return code;
  int rc = sc_config_write_docs(sc_cli_write_file, stdout);
  if (rc == SC_EWRITE) return sc_cli_write_error("stdout", 1);
  return rc ? sc_cli_fail(NULL, rc) : 0;
}
