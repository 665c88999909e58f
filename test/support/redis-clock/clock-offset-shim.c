/*
 * An LD_PRELOAD library for a test redis-server whose wall clock can be stepped while it runs
 * (an NTP step, a resumed VM), its monotonic clock untouched. The offset, in milliseconds, is a
 * little-endian int64 at the start of the file RSC_TEST_CLOCK_OFFSET_FILE names; it is mapped
 * shared, so a write to the file takes effect at the next reading of the clock.
 *
 * Written here rather than taken from libfaketime: libfaketime deadlocks or fails at start in a
 * process that uses jemalloc (Debian's redis-server does; libfaketime issues #130 and #327).
 * This shim calls the kernel directly (no dlsym, no allocation), which jemalloc's early
 * clock_gettime calls cannot recurse into.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ms;
static volatile int mapped;

static int64_t offset(void) {
  if (!mapped) {
    mapped = 1;
    const char *path = getenv("RSC_TEST_CLOCK_OFFSET_FILE");
    if (path != NULL) {
      int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
      if (fd >= 0) {
        void *map = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
        syscall(SYS_close, fd);
        if (map != MAP_FAILED) offset_ms = map;
      }
    }
  }
  if (offset_ms == NULL) return 0;
  /* the test writes the 8 bytes with pwrite, which need not be atomic: read until stable */
  int64_t a = *offset_ms, b = *offset_ms;
  while (a != b) {
    a = b;
    b = *offset_ms;
  }
  return a;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  long r = syscall(SYS_clock_gettime, id, ts);
  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
    int64_t total_ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + offset() * 1000000;
    ts->tv_sec = total_ns / 1000000000;
    ts->tv_nsec = total_ns % 1000000000;
  }
  return (int)r;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
