/*
 * replay_main.c: the driver that turns a libFuzzer harness into an ordinary
 * program: every file named on the command line (or found in a directory
 * named there) is read and passed to LLVMFuzzerTestOneInput once. Linked
 * with each harness without libFuzzer, it is the ctest regression run of
 * the corpora and crash inputs in tests/fuzz/corpus-<name>/ (fuzz.<name>),
 * under whatever sanitizers the build has.
 */
#include "fuzz_common.h"

#include <dirent.h>
#include <sys/stat.h>

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return 1;
  }
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      fprintf(stderr, "%s: out of memory\n", path);
      return 1;
    }
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap) break;
    unsigned char *q = realloc(buf, cap * 2);
    if (!q) free(buf);
    buf = q;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    fprintf(stderr, "%s: read error\n", path);
    return 1;
  }
  /* An exact-size copy, so ASan sees reads past the input as libFuzzer's do. */
  unsigned char *exact = malloc(len ? len : 1);
  if (!exact) {
    free(buf);
    return 1;
  }
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of a directory, in name order. */
static int run_dir(const char *dir, int *nfiles) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "%s: cannot open directory\n", dir);
    return 1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  int fail = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **q = realloc(names, cap * sizeof *names);
      if (!q) {
        fail = 1;
        break;
      }
      names = q;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) {
      fail = 1;
      break;
    }
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (!fail && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      fail |= run_file(names[i]);
      (*nfiles)++;
    }
    free(names[i]);
  }
  free(names);
  return fail;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  int fail = 0, nfiles = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      fail = 1;
    } else if (S_ISDIR(st.st_mode)) {
      fail |= run_dir(argv[i], &nfiles);
    } else {
      fail |= run_file(argv[i]);
      nfiles++;
    }
  }
  printf("%d input(s) replayed\n", nfiles);
  if (!fail && nfiles == 0) {
    fprintf(stderr, "no inputs\n");
    return 1;
  }
  return fail;
}
