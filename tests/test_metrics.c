/* test_metrics.c — the metrics CSV and progress lines without MPI: every step gets a row, a
 * write that fails (a full device at the header, a file-size limit in the middle of a run) is
 * an error naming the file, and the automatic --log-every gives 20 to 40 progress lines. */
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "src/core/error.h"
#include "src/report/metrics.h"
#include "testutil.h"

static AxStepRecord record(int step) {
  return (AxStepRecord){.step = step, .loss = 2.0, .lr = 1e-3, .ms = 1.0, .grad_norm = 0.5,
                        .val_loss = step % 5 ? NAN : 1.5};
}

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  int n = 0, c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

START_TEST(every_step_gets_a_row) {
  const char *path = tu_path("m.csv");
  AxMetrics m;
  ck_assert_int_eq(ax_metrics_open(&m, &(AxMetricsFiles){.csv = path, .resume_step = -1}, 1, 12, 64, 1e6), AX_OK);
  ax_metrics_log_every(&m, 5); /* progress lines do not thin out the CSV */
  for (int s = 1; s <= 12; s++) {
    AxStepRecord r = record(s);
    ck_assert_int_eq(ax_metrics_step(&m, &r), AX_OK);
  }
  ck_assert_int_eq(ax_metrics_close(&m), AX_OK);
  ck_assert_int_eq(count_lines(path), 13);
}
END_TEST

static void expect_error(int rc, const char *needle) {
  ck_assert_int_eq(rc, AX_ERR);
  ck_assert_msg(strstr(ax_error_text(), needle) != NULL, "error '%s' lacks '%s'",
                ax_error_text(), needle);
  ax_error_clear();
}

START_TEST(full_device_fails_at_open) {
  AxMetrics m;
  expect_error(ax_metrics_open(&m, &(AxMetricsFiles){.csv = "/dev/full", .resume_step = -1}, 1, 10, 64, 1e6),
               "cannot write metrics file /dev/full");
  ck_assert_int_eq(ax_metrics_close(&m), AX_ERR); /* the header never reached it */
  ax_error_clear();
}
END_TEST

/* A file-size limit (SIGXFSZ ignored, so writes past it fail with EFBIG) a few rows in. */
START_TEST(failed_row_is_an_error) {
  const char *path = tu_path("limited.csv");
  struct rlimit old, lim;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  lim = old;
  lim.rlim_cur = 512;
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
  AxMetrics m;
  int rc = ax_metrics_open(&m, &(AxMetricsFiles){.csv = path, .resume_step = -1}, 1, 1000, 64, 1e6), step = 0;
  while (rc == AX_OK && step < 1000) {
    AxStepRecord r = record(++step);
    rc = ax_metrics_step(&m, &r);
  }
  ax_metrics_close(&m);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  ck_assert_msg(step > 1 && step < 20, "failed at step %d", step);
  expect_error(rc, "cannot write metrics file");
}
END_TEST

START_TEST(auto_interval_gives_20_to_40_lines) {
  ck_assert_int_eq(ax_metrics_auto_every(0), 1);
  ck_assert_int_eq(ax_metrics_auto_every(10), 1);
  ck_assert_int_eq(ax_metrics_auto_every(100), 4);
  ck_assert_int_eq(ax_metrics_auto_every(500), 20);
  for (int steps = 20; steps <= 2000000; steps += 1 + steps / 7) {
    int every = ax_metrics_auto_every(steps), lines = steps / every;
    ck_assert_msg(lines >= 20 && lines <= 40, "%d steps, every %d: %d lines", steps, every,
                  lines);
  }
}
END_TEST

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static char *read_text(const char *path) {
  static char buf[4096];
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* A resumed run keeps the rows up to the checkpoint's step (a torn last line dropped) and
 * appends; a file with another header is refused, untouched. */
START_TEST(resume_keeps_rows_up_to_its_step) {
  const char *path = tu_path("r.csv");
  write_text(path, AX_METRICS_CSV_HEADER "\n1,a\n2,b\n3,c\n4,d\n5,e\n6,f\n7,torn");
  AxRowFile r;
  ck_assert_int_eq(ax_row_file_open(&r, path, AX_METRICS_CSV_HEADER, "", 4), AX_OK);
  ck_assert_int_eq(ax_row_file_flush(&r, fprintf(r.f, "5,new\n")), AX_OK);
  ck_assert_int_eq(ax_row_file_close(&r), AX_OK);
  ck_assert_str_eq(read_text(path), AX_METRICS_CSV_HEADER "\n1,a\n2,b\n3,c\n4,d\n5,new\n");
  const char *j = tu_path("r.jsonl");
  write_text(j, "{\"step\":1,\"x\":1}\n{\"step\":2,\"x\":2}\n");
  ck_assert_int_eq(ax_row_file_open(&r, j, NULL, "{\"step\":", 1), AX_OK);
  ck_assert_int_eq(ax_row_file_close(&r), AX_OK);
  ck_assert_str_eq(read_text(j), "{\"step\":1,\"x\":1}\n");
  write_text(path, "time,loss\n1,2\n");
  expect_error(ax_row_file_open(&r, path, AX_METRICS_CSV_HEADER, "", 4),
               "its first line is not the header");
  ck_assert_str_eq(read_text(path), "time,loss\n1,2\n");
  write_text(path, AX_METRICS_CSV_HEADER "\nhello\n");
  expect_error(ax_row_file_open(&r, path, AX_METRICS_CSV_HEADER, "", 4), "line 2 is not a row");
}
END_TEST

int main(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tu_tcase(s, "metrics", 30);
  tcase_add_test(tc, every_step_gets_a_row);
  tcase_add_test(tc, full_device_fails_at_open);
  tcase_add_test(tc, failed_row_is_an_error);
  tcase_add_test(tc, auto_interval_gives_20_to_40_lines);
  tcase_add_test(tc, resume_keeps_rows_up_to_its_step);
  return tu_run(s);
}
