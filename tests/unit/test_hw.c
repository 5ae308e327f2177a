/*
 * test_hw.c: unit tests of the hardware preset table (src/hw.c): lookup by
 * index and by case-insensitive name, and sanity of every preset's numbers
 * (positive where required, precision ordering, unique keys, cited source).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <string.h>

#include "stepcast/stepcast.h"

/* The presets the docs and configs promise; the table may grow, not shrink. */
static const char *const expected_names[] = {
    "v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h800", "h200", "b200",
    "gb200",     "h20",       "mi300x",    "mi325x",
};
#define EXPECTED_COUNT (sizeof expected_names / sizeof expected_names[0])

static void test_count_and_index(void **state) {
  (void)state;
  assert_true(sc_hw_count() >= EXPECTED_COUNT);
  for (size_t i = 0; i < sc_hw_count(); i++) assert_non_null(sc_hw_at(i));
  assert_null(sc_hw_at(sc_hw_count()));
  assert_null(sc_hw_at(sc_hw_count() + 1000));
  assert_null(sc_hw_at((size_t)-1));
}

static void test_find_every_preset(void **state) {
  (void)state;
  for (size_t i = 0; i < EXPECTED_COUNT; i++) {
    const sc_hw *hw = sc_hw_find(expected_names[i]);
    assert_non_null(hw);
    assert_string_equal(hw->name, expected_names[i]);
  }
  /* Every indexed entry is found again by its own name, as the same object. */
  for (size_t i = 0; i < sc_hw_count(); i++) {
    const sc_hw *hw = sc_hw_at(i);
    assert_ptr_equal(sc_hw_find(hw->name), hw);
  }
}

static void test_find_case_insensitive(void **state) {
  (void)state;
  for (size_t i = 0; i < sc_hw_count(); i++) {
    const sc_hw *hw = sc_hw_at(i);
    char upper[64], mixed[64];
    size_t n = strlen(hw->name);
    assert_true(n < sizeof upper);
    for (size_t k = 0; k <= n; k++) {
      unsigned char c = (unsigned char)hw->name[k];
      upper[k] = (char)toupper(c);
      mixed[k] = (char)(k % 2 ? toupper(c) : tolower(c));
    }
    assert_ptr_equal(sc_hw_find(upper), hw);
    assert_ptr_equal(sc_hw_find(mixed), hw);
  }
  assert_ptr_equal(sc_hw_find("A100-80GB"), sc_hw_find("a100-80gb"));
}

static void test_find_unknown(void **state) {
  (void)state;
  assert_null(sc_hw_find(NULL));
  assert_null(sc_hw_find(""));
  assert_null(sc_hw_find("a100"));        /* prefix of a key */
  assert_null(sc_hw_find("a100-80gbx"));  /* key plus a suffix */
  assert_null(sc_hw_find(" h100-sxm"));   /* no trimming */
  assert_null(sc_hw_find("tpu-v5"));
}

/* Device names as CUDA, nvidia-smi and nccl-tests print them; parts without
 * a preset of their own (other boards, export variants) match nothing. */
static void test_match_device_names(void **state) {
  (void)state;
  assert_ptr_equal(sc_hw_match("NVIDIA H100 80GB HBM3"), sc_hw_find("h100-sxm"));
  assert_ptr_equal(sc_hw_match("A100-SXM4-40GB"), sc_hw_find("a100-40gb"));
  assert_ptr_equal(sc_hw_match("NVIDIA A100-SXM4-80GB"), sc_hw_find("a100-80gb"));
  assert_ptr_equal(sc_hw_match("nvidia a100 80gb hbm2e"), sc_hw_find("a100-80gb"));
  assert_ptr_equal(sc_hw_match("NVIDIA H200"), sc_hw_find("h200"));
  assert_ptr_equal(sc_hw_match("NVIDIA H800"), sc_hw_find("h800"));
  assert_ptr_equal(sc_hw_match("NVIDIA B200"), sc_hw_find("b200"));
  assert_ptr_equal(sc_hw_match("Tesla V100-SXM2-32GB"), sc_hw_find("v100-32gb"));
  assert_null(sc_hw_match("NVIDIA H100 PCIe"));
  assert_null(sc_hw_match("NVIDIA H100 NVL"));
  assert_null(sc_hw_match("NVIDIA A100-PCIE-40GB"));
  assert_null(sc_hw_match("NVIDIA A800-SXM4-80GB"));
  assert_ptr_equal(sc_hw_match("NVIDIA H20"), sc_hw_find("h20"));
  assert_ptr_equal(sc_hw_match("NVIDIA GB200"), sc_hw_find("gb200"));
  assert_ptr_equal(sc_hw_match("AMD Instinct MI300X"), sc_hw_find("mi300x"));
  assert_null(sc_hw_match("NVIDIA GH200 480GB"));
  assert_null(sc_hw_match("NVIDIA H100 96GB HBM2e"));
  assert_null(sc_hw_match(""));
  assert_null(sc_hw_match(NULL));
}

static void test_names_unique(void **state) {
  (void)state;
  for (size_t i = 0; i < sc_hw_count(); i++) {
    for (size_t j = i + 1; j < sc_hw_count(); j++) {
      const char *a = sc_hw_at(i)->name, *b = sc_hw_at(j)->name;
      /* Unique even ignoring case, or one would shadow the other in find. */
      size_t k = 0;
      while (a[k] && tolower((unsigned char)a[k]) == tolower((unsigned char)b[k])) k++;
      assert_false(a[k] == '\0' && b[k] == '\0');
    }
  }
}

static void test_fields_filled(void **state) {
  (void)state;
  for (size_t i = 0; i < sc_hw_count(); i++) {
    const sc_hw *hw = sc_hw_at(i);
    assert_non_null(hw->name);
    assert_true(strlen(hw->name) > 0);
    assert_non_null(hw->description);
    assert_true(strlen(hw->description) > 0);
    assert_non_null(hw->source);
    assert_non_null(strstr(hw->source, "datasheet"));
    assert_true(hw->fp32_tflops > 0);
    assert_true(hw->bf16_tflops > 0);
    assert_true(hw->tf32_tflops >= 0);
    assert_true(hw->fp8_tflops >= 0);
    assert_true(hw->hbm_gib > 0);
    assert_true(hw->hbm_gbps > 0);
    assert_true(hw->sms > 0);
    assert_true(hw->nvlink_gbps > 0);
    assert_true(hw->nic_gbps > 0);
    assert_true(hw->gpus_per_node > 0);
  }
}

static void test_precision_ordering(void **state) {
  (void)state;
  for (size_t i = 0; i < sc_hw_count(); i++) {
    const sc_hw *hw = sc_hw_at(i);
    /* Tensor cores always beat the FP32 vector units. */
    assert_true(hw->bf16_tflops > hw->fp32_tflops);
    if (hw->tf32_tflops > 0) {
      assert_true(hw->bf16_tflops >= hw->tf32_tflops);
      assert_true(hw->tf32_tflops >= hw->fp32_tflops);
    }
    if (hw->fp8_tflops > 0) {
      /* FP8 runs at twice the BF16 rate; 1e-3 relative slack covers the
       * datasheets' rounding (H100: 1978.9 vs 2 x 989.4). */
      double ratio = hw->fp8_tflops / hw->bf16_tflops;
      assert_true(ratio > 2.0 - 2e-3 && ratio < 2.0 + 2e-3);
    }
  }
}

/* Spot checks of datasheet values other modules and the golden tests rely on. */
static void test_known_values(void **state) {
  (void)state;
  const sc_hw *a100 = sc_hw_find("a100-80gb");
  assert_non_null(a100);
  assert_true(a100->bf16_tflops == 312.0);
  assert_true(a100->hbm_gbps == 2039.0);
  assert_true(a100->hbm_gib == 80.0);
  assert_int_equal(a100->sms, 108);
  assert_true(a100->fp8_tflops == 0.0);

  const sc_hw *v100 = sc_hw_find("v100-32gb");
  assert_non_null(v100);
  assert_true(v100->tf32_tflops == 0.0);
  assert_true(v100->bf16_tflops == 125.0);

  const sc_hw *h100 = sc_hw_find("h100-sxm");
  const sc_hw *h800 = sc_hw_find("h800");
  const sc_hw *h200 = sc_hw_find("h200");
  assert_non_null(h100);
  assert_non_null(h800);
  assert_non_null(h200);
  /* H800 and H200 share H100 SXM compute; they differ in NVLink and HBM. */
  assert_true(h800->bf16_tflops == h100->bf16_tflops);
  assert_true(h200->bf16_tflops == h100->bf16_tflops);
  assert_true(h800->nvlink_gbps < h100->nvlink_gbps);
  assert_true(h200->hbm_gib > h100->hbm_gib);
  assert_true(h200->hbm_gbps > h100->hbm_gbps);

  const sc_hw *b200 = sc_hw_find("b200");
  assert_non_null(b200);
  assert_true(b200->fp8_tflops == 4500.0);
  assert_int_equal(b200->sms, 148);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_count_and_index),
      cmocka_unit_test(test_find_every_preset),
      cmocka_unit_test(test_find_case_insensitive),
      cmocka_unit_test(test_find_unknown),
      cmocka_unit_test(test_match_device_names),
      cmocka_unit_test(test_names_unique),
      cmocka_unit_test(test_fields_filled),
      cmocka_unit_test(test_precision_ordering),
      cmocka_unit_test(test_known_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
