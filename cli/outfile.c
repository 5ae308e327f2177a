/*
 * outfile.c: atomic output files (outfile.h): a temporary file beside the
 * target (mkstemp), fsync, rename; removed on failure.
 */
#include "outfile.h"

#include "stepcast/stepcast.h"

#include "opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int out_error(const char *path, const char *what) {
  return sc_cli_error(sc_exit_code(SC_EWRITE), "%s: %s: %s", path, what, strerror(errno));
}

int sc_cli_out_open(sc_cli_out *o, const char *path) {
  memset(o, 0, sizeof *o);
  if (!path || !strcmp(path, "-")) {
    o->f = stdout;
    return 0;
  }
  o->path = path;
  /* A directory in the way would only fail the final rename, after the
   * work: refuse it now. */
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return out_error(path, "cannot open");
  }
  /* Beside the target, so that the rename stays on one file system. */
  int n = snprintf(o->tmp, sizeof o->tmp, "%s.tmp-XXXXXX", path);
  if (n < 0 || (size_t)n >= sizeof o->tmp) {
    errno = ENAMETOOLONG;
    o->tmp[0] = 0;
    return out_error(path, "cannot open");
  }
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    o->tmp[0] = 0;
    return out_error(path, "cannot open");
  }
  /* mkstemp creates 0600; give the file the mode a plain create would. */
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask);
  o->f = fdopen(fd, "wb");
  if (!o->f) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    o->tmp[0] = 0;
    errno = e;
    return out_error(path, "cannot open");
  }
  return 0;
}

int sc_cli_out_close(sc_cli_out *o, int failed) {
  if (!o->f) return 0;
  if (!o->path) { /* stdout */
    int bad = fflush(o->f) != 0 || ferror(o->f);
    o->f = NULL;
    return bad && !failed ? sc_cli_write_error("stdout", 1) : 0;
  }
  int code = 0;
  int bad = failed || fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0;
  int e = errno;
  if (fclose(o->f) != 0 && !bad) bad = 1, e = errno;
  o->f = NULL;
  if (!bad && rename(o->tmp, o->path) != 0) bad = 1, e = errno;
  if (bad) {
    unlink(o->tmp);
    if (!failed) { /* the writer's own failure was reported by the caller */
      errno = e;
      code = out_error(o->path, "write failed");
    } else {
      code = sc_exit_code(SC_EWRITE);
    }
  }
  o->tmp[0] = 0;
  return code;
}

int sc_cli_out_dir(const char *dir) {
  char p[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof p) {
    errno = n ? ENAMETOOLONG : ENOENT;
    return out_error(dir, "cannot create directory");
  }
  memcpy(p, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != 0) continue;
    char c = p[i];
    p[i] = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return out_error(p, "cannot create directory");
    p[i] = c;
  }
  struct stat st;
  if (stat(dir, &st) != 0) return out_error(dir, "cannot create directory");
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return out_error(dir, "cannot write into");
  }
  if (access(dir, W_OK | X_OK) != 0) return out_error(dir, "cannot write into");
  return 0;
}
